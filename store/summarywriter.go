package store

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// The writers' part of the summary index (docs/storage.md, "Summary
// index", Maintenance): the records every header publish makes, through the
// Observer that OpenRoot gives every Root (store/observer.go). The commit
// path knows only the Observer.

// summaryObserver keeps the summary index in step with every header
// publish (an Observer, store/observer.go): it announces each change
// before the header is published and confirms it after.
type summaryObserver struct{ r *Root }

func (o summaryObserver) Publishing(scopeDir, id string, old, next *Header) Publication {
	if t := beginClaim(o.r.fs, o.r.marks, scopeDir, id, old, next); t != nil {
		return t
	}
	return nil
}

func (summaryObserver) Committed(*Commit) error         { return nil }
func (summaryObserver) SavedMeta(string, *Header) error { return nil }
func (o summaryObserver) Deleted(scopeDir, id string)   { noteDeleted(o.r.fs, o.r.marks, scopeDir, id) }

// claimTx is one writer's change of a session's claim around a header
// publish. It holds a shared flock on the scope directory from the first
// record to the last, so that no rebuild (which takes it exclusively)
// replaces the index in between. A failed index write never fails the
// write it accompanies: the index is removed (a list rebuilds it) or, if
// that fails too, marked stale in this process.
type claimTx struct {
	fs    fsys
	marks *scopeMarks
	scope string
	id    string
	final claim
	lock  io.Closer
	f     fileHandle
	done  chan struct{} // closed when the announcing record is durable
}

// beginClaim announces a change from header old to next (old nil: the
// session is being created) before next is published. A change that
// leaves the claim as it is (a title, a pin, a read receipt) costs
// nothing. Otherwise an update appends a loose claim covering both
// headers and fsyncs it, in the background (Ready waits for it before
// the publish); a creation appends next's exact claim, not fsynced: a
// directory the index does not know is read directly. nil means there
// is nothing to do.
func beginClaim(fs fsys, marks *scopeMarks, scope, id string, old, next *Header) *claimTx {
	nc := claimOf(next)
	if old != nil && claimOf(old) == nc {
		return nil
	}
	t := &claimTx{fs: fs, marks: marks, scope: scope, id: id, final: nc, done: make(chan struct{})}
	announce := nc
	if old != nil {
		oc := claimOf(old)
		announce = claim{state: claimLoose, flags: oc.flags | nc.flags, updatedAt: max(oc.updatedAt, nc.updatedAt)}
	}
	run := func() {
		defer close(t.done)
		lock, err := fs.LockShared(scope)
		if err != nil {
			// No lock, no record: the index must go. Without the lock a
			// rebuild may put one back that lacks this change, so this
			// process also stops trusting it.
			t.invalidate()
			marks.markSummariesStale(scope)
			return
		}
		t.lock = lock
		f, err := fs.OpenFile(filepath.Join(scope, summariesFile), os.O_WRONLY|os.O_APPEND, 0)
		if errors.Is(err, os.ErrNotExist) {
			return // no index: lists scan and build one
		}
		if err != nil {
			t.invalidate()
			return
		}
		t.f = f
		if _, err := f.Write(appendSummaryLine(nil, id, announce)); err != nil {
			t.invalidate()
			return
		}
		if old != nil {
			// The loose claim must be durable before the header it covers.
			if err := f.Sync(); err != nil {
				t.invalidate()
			}
		}
	}
	if old == nil {
		run()
		t.final = claim{} // announced exactly already
	} else {
		go run()
	}
	return t
}

// Ready returns once the announcing record is durable (or given up).
func (t *claimTx) Ready() {
	<-t.done
}

// Done closes the change: published says next is now the header, and its
// exact claim replaces the loose one. Otherwise the loose claim stays,
// which is still an upper bound.
func (t *claimTx) Done(published bool) {
	t.Ready()
	if published && t.f != nil && t.final != (claim{}) {
		if _, err := t.f.Write(appendSummaryLine(nil, t.id, t.final)); err != nil {
			t.invalidate()
		}
	}
	t.close()
}

func (t *claimTx) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	if t.lock != nil {
		t.lock.Close()
		t.lock = nil
	}
}

// invalidate removes the index after a failed write; lists rebuild it.
func (t *claimTx) invalidate() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	if err := t.fs.RemoveAll(filepath.Join(t.scope, summariesFile)); err != nil {
		t.marks.markSummariesStale(t.scope)
	}
}

// noteDeleted appends a tombstone after a session directory was hidden.
// It only saves later lists a lookup: a claim of a directory that is gone
// is ignored anyway.
func noteDeleted(fs fsys, marks *scopeMarks, scope, id string) {
	t := &claimTx{fs: fs, marks: marks, scope: scope, id: id, final: claim{state: claimDeleted}, done: make(chan struct{})}
	close(t.done)
	lock, err := fs.LockShared(scope)
	if err != nil {
		return
	}
	t.lock = lock
	f, err := fs.OpenFile(filepath.Join(scope, summariesFile), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		t.f = f
		t.Done(true)
		return
	}
	t.close()
}
