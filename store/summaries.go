package store

import "github.com/loopdev/loop/store/internal/summary"

// The summary index (docs/storage.md, "Summary index") lives in
// store/internal/summary: its format, reading, writers' records and
// rebuild. This file wires it to the store: the Observer every Root has,
// the Record a header gives, and the file-system seam it goes through.

// summaryIndex is the Root's summary index, through the Root's current
// file-system seam (tests replace it) and its stale marks.
func (r *Root) summaryIndex() summary.Index {
	return summary.Index{FS: r.fs, Marks: r.marks}
}

// summaryRecord is what the summary index keeps of h.
func summaryRecord(h *Header) summary.Record {
	return summary.Record{
		ID:             h.ID,
		UpdatedAt:      h.UpdatedAt,
		Archived:       h.ArchivedAt != nil,
		HasUserMessage: h.UserMessageCount > 0 || h.PendingRun != "", // a draft's first run lists from its prompt on
	}
}

// summaryClaim is the exact claim of h.
func summaryClaim(h *Header) summary.Claim { return summary.ClaimOf(summaryRecord(h)) }

// summaryObserver keeps the summary index in step with every header
// publish (an Observer, store/observer.go): it announces each change
// before the header is published and confirms it after. OpenRoot gives
// every Root one: the index's promise (a claim never below the header)
// binds every writer of a header.
type summaryObserver struct{ r *Root }

func (o summaryObserver) Publishing(scopeDir, id string, old, next *Header) Publication {
	var prev *summary.Record
	if old != nil {
		rec := summaryRecord(old)
		prev = &rec
	}
	if t := o.r.summaryIndex().Begin(scopeDir, id, prev, summaryRecord(next)); t != nil {
		return t
	}
	return nil
}

func (summaryObserver) Committed(*Commit) error         { return nil }
func (summaryObserver) SavedMeta(string, *Header) error { return nil }
func (o summaryObserver) Deleted(scopeDir, id string) {
	o.r.summaryIndex().NoteDeleted(scopeDir, id)
}
