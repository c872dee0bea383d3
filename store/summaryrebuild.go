package store

import (
	"errors"
	"slices"

	"github.com/loopdev/loop/store/internal/summary"
)

// Rebuilding the summary index from every header of a scope
// (docs/storage.md, "Summary index"): the store reads the headers, the
// index (store/internal/summary/rebuild.go) writes them and keeps the
// records writers append meanwhile.

// scanRebuilding reads every header of the scope, as List does; with
// rebuild it also rewrites the index from what it read. err is a
// *ListError alongside the headers that could be read, or another error
// and no headers.
func (r *Root) scanRebuilding(workspaceID, sd string, rebuild bool) ([]Header, error) {
	var prep *summary.Rebuild
	if rebuild {
		prep = r.prepareRebuild(sd)
	}
	heads, others, err := r.scanAll(workspaceID)
	var lerr *ListError
	if err != nil && !errors.As(err, &lerr) {
		return nil, err
	}
	if prep != nil {
		finishRebuild(prep, heads, others)
	}
	return heads, err
}

// rebuildSummaries rewrites the index from every header of the scope.
func (r *Root) rebuildSummaries(workspaceID, sd string) {
	prep := r.prepareRebuild(sd)
	if prep == nil {
		return
	}
	heads, others, err := r.scanAll(workspaceID)
	var lerr *ListError
	if err != nil && !errors.As(err, &lerr) {
		return
	}
	finishRebuild(prep, heads, others)
}

// prepareRebuild starts a rebuild of the scope's index (nil: none now).
func (r *Root) prepareRebuild(sd string) *summary.Rebuild {
	return r.summaryIndex().Prepare(sd)
}

// finishRebuild writes the index from the headers and other names read.
func finishRebuild(prep *summary.Rebuild, heads []Header, others []summary.NotSession) {
	recs := make([]summary.Record, len(heads))
	for i := range heads {
		recs[i] = summaryRecord(&heads[i])
	}
	prep.Finish(recs, others)
}

// summarize filters and orders headers as List does.
func summarize(heads []Header, archived bool) []Summary {
	out := make([]Summary, 0, len(heads))
	for i := range heads {
		h := &heads[i]
		if archived {
			if h.ArchivedAt == nil {
				continue
			}
		} else if h.ArchivedAt != nil || (h.UserMessageCount == 0 && h.PendingRun == "") {
			continue
		}
		out = append(out, h.Summary())
	}
	slices.SortFunc(out, func(a, b Summary) int {
		switch {
		case a.UpdatedAt != b.UpdatedAt:
			if a.UpdatedAt > b.UpdatedAt {
				return -1
			}
			return 1
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		}
		return 0
	})
	return out
}
