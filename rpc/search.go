package rpc

import (
	"context"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/native"
)

func (s *Server) sessionSearch(ctx context.Context, p *native.SessionSearchParams) (*native.SearchResult, error) {
	o, err := searchOptions(p)
	if err != nil {
		return nil, err
	}
	return dispatch.Defer(ctx, func(ctx context.Context) (*native.SearchResult, error) {
		res, err := s.eng.Search(ctx, o)
		if err != nil {
			return nil, err
		}
		out := native.SearchResultOf(res)
		return &out, nil
	})
}

// SearchResultOf is session/search's result for a page of hits
// (docs/protocol.md). `loop search --json` prints it, so the command and
// the method can never disagree.
func SearchResultOf(r engine.SearchResult) any {
	out := native.SearchResultOf(r)
	return &out
}

// searchOptions checks session/search's params; ACP's _loop/search takes
// the same members (rpc/internal/acp/search.go).
func searchOptions(p *native.SessionSearchParams) (engine.SearchOptions, error) {
	var o engine.SearchOptions
	if p.Query == nil {
		return o, invalidParams("query is required")
	}
	o.Query = *p.Query
	switch {
	case p.Scope != "" && p.WorkspaceID != nil:
		return o, invalidParams("give workspaceId or scope, not both")
	case p.Scope == "all":
		o.All = true
	case p.Scope != "":
		return o, invalidParams(`scope must be "all"`)
	default:
		ws, err := resolveScope("workspaceId", p.WorkspaceID)
		if err != nil {
			return o, err
		}
		o.WorkspaceID = ws
	}
	if p.Limit != nil {
		n, err := safeCount("limit", p.Limit)
		if err != nil || n == 0 {
			return o, invalidParams("limit must be a positive integer")
		}
		o.Limit = n
	}
	o.Cursor = p.Cursor
	var err error
	if o.IncludeTools, err = optionalBool("includeTools", p.IncludeTools, false); err != nil {
		return o, err
	}
	o.Archived, err = optionalBool("archived", p.Archived, false)
	return o, err
}
