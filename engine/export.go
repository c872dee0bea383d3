package engine

import (
	"github.com/loopdev/loop/internal/export"
	"github.com/loopdev/loop/store"
)

// Export formats (docs/protocol.md, session/export).
const (
	ExportMarkdown = "markdown"
	ExportJSON     = "json"
)

// Export renders the committed state of session id: ExportMarkdown for
// people, ExportJSON exactly (every message, timing, runtime record and
// header member, versioned: importing it recreates the session,
// docs/storage.md). Work in progress that is not committed yet is not in
// it. An unknown format is invalid_params.
func (e *Engine) Export(id, format string) ([]byte, error) {
	if format != ExportMarkdown && format != ExportJSON {
		return nil, errorf(CodeInvalidParams, "format %q is not %q or %q", format, ExportMarkdown, ExportJSON)
	}
	s, err := e.Session(id)
	if err != nil {
		return nil, err
	}
	return s.Export(format)
}

// Export renders the session's committed state as Engine.Export does.
func (s *Session) Export(format string) ([]byte, error) {
	h, msgs, rt, timings := s.st.Contents()
	switch format {
	case ExportMarkdown:
		return export.Markdown(&h, msgs, rt), nil
	case ExportJSON:
		b, err := store.EncodeExport(&h, msgs, rt, timings, s.e.now())
		if err != nil {
			return nil, wrapError(CodeInternal, err, "export session %s", s.id)
		}
		return b, nil
	}
	return nil, errorf(CodeInvalidParams, "format %q is not %q or %q", format, ExportMarkdown, ExportJSON)
}
