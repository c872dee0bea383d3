package rpc

import (
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/native"
)

// engineFiles converts attached files; nil stays nil (a queue edit that
// keeps its files) and [] stays empty (one that removes them). A file
// without text is malformed (native.FileParam).
func engineFiles(ps []native.FileParam) ([]engine.File, error) {
	if ps == nil {
		return nil, nil
	}
	files := make([]engine.File, len(ps))
	for i, p := range ps {
		if p.Text == nil {
			return nil, &engine.Error{Code: engine.CodeInvalidTextFiles, Message: sprintf("file %d: text is required (a string, \"\" for an empty file)", i)}
		}
		files[i] = engine.File{Name: p.Name, Text: string(*p.Text)}
	}
	return files, nil
}
