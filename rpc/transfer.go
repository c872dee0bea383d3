package rpc

import (
	"context"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/native"
)

// sessionExport is session/export (docs/protocol.md): the engine renders,
// this only translates.
func (s *Server) sessionExport(ctx context.Context, p *native.SessionExportParams) (*native.ExportResult, error) {
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	if err := required("format", p.Format); err != nil {
		return nil, err
	}
	if p.Format != engine.ExportMarkdown && p.Format != engine.ExportJSON {
		return nil, invalidParams("format must be %q or %q", engine.ExportMarkdown, engine.ExportJSON)
	}
	return dispatch.Defer(ctx, func(context.Context) (*native.ExportResult, error) {
		out, err := s.eng.Export(p.SessionID, p.Format)
		if err != nil {
			return nil, err
		}
		return &native.ExportResult{Format: p.Format, Content: string(out)}, nil
	})
}

// sessionImport is session/import, Loop's extension (docs/protocol.md):
// the files the client names become sessions as loop import makes them.
func (s *Server) sessionImport(ctx context.Context, p *native.SessionImportParams) (*native.ImportResult, error) {
	paths := p.Paths
	if p.Path != "" {
		paths = append([]string{p.Path}, paths...)
	}
	if len(paths) == 0 {
		return nil, invalidParams("path or paths is required")
	}
	if p.Cwd != "" && p.WorkspaceID != nil {
		return nil, invalidParams("give cwd or workspaceId, not both")
	}
	cwd := p.Cwd
	if p.WorkspaceID != nil {
		ws, err := s.eng.Root().Workspace(*p.WorkspaceID)
		if err != nil {
			return nil, &engine.Error{Code: engine.CodeWorkspaceNotFound, Message: sprintf("no workspace %q", *p.WorkspaceID)}
		}
		cwd = ws.Cwd
	}
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.ImportResult, error) {
		res := &native.ImportResult{Sessions: []native.ImportedSession{}, Skipped: []native.ImportProblem{}, Failed: []native.ImportProblem{}}
		_, err := s.eng.Import(ctx, paths, engine.ImportOptions{Cwd: cwd, Progress: func(r engine.ImportResult) {
			switch {
			case r.Skipped:
				res.Skipped = append(res.Skipped, native.ImportProblem{File: r.File, Error: errorInfoOf(r.Err)})
			case r.Err != nil:
				res.Failed = append(res.Failed, native.ImportProblem{File: r.File, Error: errorInfoOf(r.Err)})
			default:
				res.Sessions = append(res.Sessions, native.ImportedSession{File: r.File, Format: r.Format, SessionID: r.SessionID,
					WorkspaceID: scopeOf(r.WorkspaceID), Cwd: r.Cwd, MessageCount: r.Messages, Existed: r.Existed})
			}
		}})
		if err != nil {
			return nil, err
		}
		return res, nil
	})
}

// scopeOf is a workspace id on the wire: null for an independent chat.
func scopeOf(workspaceID string) *string {
	if workspaceID == "" {
		return nil
	}
	return &workspaceID
}

func errorInfoOf(err error) native.ErrorInfo {
	return native.ErrorInfo{Code: string(engine.CodeOf(err)), Message: err.Error()}
}
