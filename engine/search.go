package engine

import (
	"context"
	"errors"

	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/search"
)

// SearchOptions is one full-text search over stored sessions
// (docs/protocol.md, session/search).
type SearchOptions struct {
	// Query holds words and "quoted phrases"; a message matches when it
	// contains every one, compared after Unicode case folding.
	Query string
	// WorkspaceID is the scope ("" for independent chats) unless All.
	WorkspaceID string
	// All searches every registered workspace and the independent chats.
	All bool
	// Workspaces, when not nil, replaces WorkspaceID and All: exactly these
	// registered workspaces (ACP's _loop/search, which knows directories).
	Workspaces []string
	// Limit is the page size (0: search.DefaultLimit, at most
	// search.MaxLimit); Cursor continues an earlier page.
	Limit  int
	Cursor string
	// IncludeTools searches tool results too; Archived searches archived
	// sessions instead of the others.
	IncludeTools bool
	Archived     bool
}

// SearchHit is one matching message; SearchResult one page of them.
type (
	SearchHit    = search.Hit
	SearchRange  = search.Range
	SearchResult = search.Result
)

// Search finds committed messages (what is saved, not what a run is still
// streaming), best matches first. An unknown workspace is
// workspace_not_found; a bad query, limit or cursor invalid_params.
func (e *Engine) Search(ctx context.Context, o SearchOptions) (SearchResult, error) {
	var scopes []string
	switch {
	case o.Workspaces != nil:
		for _, id := range o.Workspaces {
			if _, err := e.checkScope(id); err != nil {
				return SearchResult{}, err
			}
		}
		scopes = o.Workspaces
	case o.All:
		wss, err := e.root.Workspaces()
		if err != nil {
			return SearchResult{}, storageError(err, "search")
		}
		for _, w := range wss {
			scopes = append(scopes, w.ID)
		}
		scopes = append(scopes, "")
	default:
		if _, err := e.checkScope(o.WorkspaceID); err != nil {
			return SearchResult{}, err
		}
		scopes = []string{o.WorkspaceID}
	}
	res, err := e.search.Search(ctx, search.Query{
		Text: o.Query, Scopes: scopes, Limit: o.Limit, Cursor: o.Cursor,
		IncludeTools: o.IncludeTools, Archived: o.Archived,
	})
	if errors.Is(err, store.ErrInvalid) {
		// A bad query, limit or cursor: the store's words say which, and
		// need no context (a command line shows them as they are).
		return SearchResult{}, &Error{Code: CodeInvalidParams, Message: err.Error(), Causes: []error{err}}
	}
	if err != nil {
		return SearchResult{}, storageError(err, "search")
	}
	return res, nil
}
