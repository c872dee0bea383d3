package acp

import (
	"context"

	"github.com/loopdev/loop/internal/tools"
)

// editorFS serves read, write and edit from the client's buffers
// (fs/read_text_file, fs/write_text_file), so the agent sees unsaved
// changes and the editor sees its writes at once. The tools decide what
// stays on disk (images, binary files) and what happens when the client
// fails; an operation the client did not advertise is tools.ErrNotServed.
type editorFS struct {
	a           *Agent
	sessionID   string
	read, write bool
}

var _ tools.ClientFS = (*editorFS)(nil)

type readTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
}

type writeTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}

// ReadTextFile asks for the whole file: read pages through it itself, and
// edit needs all of it. (ACP's line and limit are not used.)
func (f *editorFS) ReadTextFile(ctx context.Context, path string) (string, error) {
	if !f.read || !f.a.serving(f.sessionID) {
		return "", tools.ErrNotServed
	}
	var res struct {
		Content string `json:"content"`
	}
	if err := f.a.callClient(ctx, "fs/read_text_file", readTextFileParams{SessionID: f.sessionID, Path: path}, &res); err != nil {
		return "", err
	}
	return res.Content, nil
}

func (f *editorFS) WriteTextFile(ctx context.Context, path, content string) error {
	if !f.write || !f.a.serving(f.sessionID) {
		return tools.ErrNotServed
	}
	return f.a.callClient(ctx, "fs/write_text_file", writeTextFileParams{SessionID: f.sessionID, Path: path, Content: content}, nil)
}
