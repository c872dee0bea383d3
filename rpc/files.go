package rpc

import (
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
)

// fileParam is a File as the wire carries it. Text is a pointer because
// on the wire it is required: a file without text, or with "text": null,
// is not an empty file (that is "text": "") but a malformed one.
type fileParam struct {
	Name string         `json:"name"`
	Text *dispatch.Text `json:"text"`
}

// engineFiles converts attached files; nil stays nil (a queue edit that
// keeps its files) and [] stays empty (one that removes them).
func engineFiles(ps []fileParam) ([]engine.File, error) {
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
