package rpc

import (
	"context"
	"encoding/json"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/native"
)

// searchParams are session/search's params; ACP's _loop/search takes the
// same (rpc/internal/acp).
type searchParams struct {
	Query        *string         `json:"query"`
	WorkspaceID  scope           `json:"workspaceId"`
	Scope        string          `json:"scope"`
	Limit        json.RawMessage `json:"limit"`
	Cursor       string          `json:"cursor"`
	IncludeTools json.RawMessage `json:"includeTools"`
	Archived     json.RawMessage `json:"archived"`
}

func (s *Server) sessionSearch(raw *json.RawMessage) (any, error) {
	var p searchParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	o, err := p.options()
	if err != nil {
		return nil, err
	}
	return later(func(ctx context.Context) (any, error) {
		res, err := s.eng.Search(ctx, o)
		if err != nil {
			return nil, err
		}
		return SearchResultOf(res), nil
	})
}

// SearchResultOf is session/search's result for a page of hits
// (docs/protocol.md). `loop search --json` prints it, so the command and
// the method can never disagree.
func SearchResultOf(r engine.SearchResult) any {
	out := native.SearchResultOf(r)
	return &out
}

func (p *searchParams) options() (engine.SearchOptions, error) {
	var o engine.SearchOptions
	if p.Query == nil {
		return o, invalidParams("query is required")
	}
	o.Query = *p.Query
	switch {
	case p.Scope != "" && p.WorkspaceID.raw != nil:
		return o, invalidParams("give workspaceId or scope, not both")
	case p.Scope == "all":
		o.All = true
	case p.Scope != "":
		return o, invalidParams(`scope must be "all"`)
	default:
		ws, err := p.WorkspaceID.resolve("workspaceId")
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
	if p.IncludeTools != nil {
		if o.IncludeTools, err = strictBool("includeTools", p.IncludeTools); err != nil {
			return o, err
		}
	}
	if p.Archived != nil {
		if o.Archived, err = strictBool("archived", p.Archived); err != nil {
			return o, err
		}
	}
	return o, nil
}
