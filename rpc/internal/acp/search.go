package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/loopdev/loop/engine"
	"github.com/sourcegraph/jsonrpc2"
)

// searchMethod is Loop's ACP extension for full-text search (docs/acp.md,
// "_loop/search"); initialize advertises it in agentCapabilities._meta.
const searchMethod = "_loop/search"

// searchMeta is what initialize's agentCapabilities._meta says of it.
func searchMeta() map[string]any {
	return map[string]any{"loop": map[string]any{
		"search":       map[string]any{"method": searchMethod},
		"restoreFiles": map[string]any{"method": restoreFilesMethod},
		"changes":      map[string]any{"method": changesMethod},
		"rewind":       map[string]any{"method": rewindMethod},
		"edit":         map[string]any{"method": editMethod},
	}}
}

type searchHit struct {
	SessionID    string        `json:"sessionId"`
	Cwd          string        `json:"cwd"`
	Title        *string       `json:"title"`
	MessageIndex int           `json:"messageIndex"`
	Role         string        `json:"role"`
	Snippet      string        `json:"snippet"`
	Ranges       []searchRange `json:"ranges"`
	UpdatedAt    *string       `json:"updatedAt"`
}

type searchRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

type searchResult struct {
	Hits       []searchHit `json:"hits"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// loopSearch answers _loop/search: session/search's query, limit, cursor,
// includeTools and archived, scoped as ACP's session/list is: the sessions
// of the workspace of cwd, or of every workspace without it.
func (a *Agent) loopSearch(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		Query        *string         `json:"query"`
		Cwd          *string         `json:"cwd"`
		Limit        *int            `json:"limit"`
		Cursor       string          `json:"cursor"`
		IncludeTools json.RawMessage `json:"includeTools"`
		Archived     json.RawMessage `json:"archived"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Query == nil {
		return nil, invalidParams("query is required")
	}
	if p.Cwd != nil {
		if err := absolute("cwd", *p.Cwd); err != nil {
			return nil, err
		}
	}
	o := engine.SearchOptions{Query: *p.Query, Cursor: p.Cursor}
	if p.Limit != nil {
		if *p.Limit < 1 {
			return nil, invalidParams("limit must be a positive integer")
		}
		o.Limit = *p.Limit
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *bool
	}{{"includeTools", p.IncludeTools, &o.IncludeTools}, {"archived", p.Archived, &o.Archived}} {
		switch string(bytes.TrimSpace(f.raw)) {
		case "", "null", "false":
		case "true":
			*f.dst = true
		default:
			return nil, invalidParams("%s must be a boolean", f.name)
		}
	}
	return later(func(ctx context.Context) (any, error) {
		wss, err := a.eng.Workspaces()
		if err != nil {
			return nil, err
		}
		cwds := map[string]string{}
		o.Workspaces = []string{}
		for _, ws := range wss {
			if p.Cwd != nil {
				want := filepath.Clean(*p.Cwd)
				canon, err := filepath.EvalSymlinks(want)
				if err != nil {
					canon = want
				}
				if ws.Cwd != want && ws.Cwd != canon {
					continue
				}
			}
			o.Workspaces = append(o.Workspaces, ws.ID)
			cwds[ws.ID] = ws.Cwd
		}
		res, err := a.eng.Search(ctx, o)
		if err != nil {
			return nil, err
		}
		out := searchResult{Hits: []searchHit{}, NextCursor: res.NextCursor}
		for _, h := range res.Hits {
			hit := searchHit{SessionID: h.SessionID, MessageIndex: h.MessageIndex, Role: h.Role,
				Snippet: h.Snippet, Ranges: []searchRange{}, UpdatedAt: isoTime(h.UpdatedAt)}
			if h.WorkspaceID != nil {
				hit.Cwd = cwds[*h.WorkspaceID]
			}
			if h.Title != "" {
				t := h.Title
				hit.Title = &t
			}
			for _, r := range h.Ranges {
				hit.Ranges = append(hit.Ranges, searchRange{r.Start, r.End})
			}
			out.Hits = append(out.Hits, hit)
		}
		return out, nil
	})
}
