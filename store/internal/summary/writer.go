package summary

import (
	"errors"
	"io"
	"os"
	"path/filepath"

	"github.com/loopdev/loop/store/internal/fsys"
)

// The writers' part of the summary index (docs/storage.md, "Summary
// index", Maintenance): the records every header publish makes. The store
// calls Begin and NoteDeleted from the Observer that OpenRoot gives every
// Root (store/summaries.go); the commit path knows only the Observer.

// Tx is one writer's change of a session's claim around a header publish.
// It holds a shared flock on the scope directory from the first record to
// the last, so that no rebuild (which takes it exclusively) replaces the
// index in between. A failed index write never fails the write it
// accompanies: the index is removed (a list rebuilds it) or, if that
// fails too, the scope is marked stale.
type Tx struct {
	x     Index
	scope string
	id    string
	final Claim
	lock  io.Closer
	f     fsys.File
	done  chan struct{} // closed when the announcing record is durable
}

// Begin announces a change of session id in scope directory scope from
// header old to next (old nil: the session is being created) before next
// is published. A change that leaves the claim as it is (a title, a pin,
// a read receipt) costs nothing. Otherwise an update appends a loose claim
// covering both headers and fsyncs it, in the background (Ready waits for
// it before the publish); a creation appends next's exact claim, not
// fsynced: a directory the index does not know is read directly. nil means
// there is nothing to do.
func (x Index) Begin(scope, id string, old *Record, next Record) *Tx {
	nc := ClaimOf(next)
	if old != nil && ClaimOf(*old) == nc {
		return nil
	}
	t := &Tx{x: x, scope: scope, id: id, final: nc, done: make(chan struct{})}
	announce := nc
	if old != nil {
		oc := ClaimOf(*old)
		announce = Claim{State: Loose, Flags: oc.Flags | nc.Flags, UpdatedAt: max(oc.UpdatedAt, nc.UpdatedAt)}
	}
	run := func() {
		defer close(t.done)
		lock, err := x.FS.LockShared(scope)
		if err != nil {
			// No lock, no record: the index must go. Without the lock a
			// rebuild may put one back that lacks this change, so this
			// owner also stops trusting it.
			t.invalidate()
			x.Marks.MarkStale(scope)
			return
		}
		t.lock = lock
		f, err := x.FS.OpenFile(filepath.Join(scope, FileName), os.O_WRONLY|os.O_APPEND, 0)
		if errors.Is(err, os.ErrNotExist) {
			return // no index: lists scan and build one
		}
		if err != nil {
			t.invalidate()
			return
		}
		t.f = f
		if _, err := f.Write(AppendLine(nil, id, announce)); err != nil {
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
		t.final = Claim{} // announced exactly already
	} else {
		go run()
	}
	return t
}

// Ready returns once the announcing record is durable (or given up).
func (t *Tx) Ready() {
	<-t.done
}

// Done closes the change: published says next is now the header, and its
// exact claim replaces the loose one. Otherwise the loose claim stays,
// which is still an upper bound.
func (t *Tx) Done(published bool) {
	t.Ready()
	if published && t.f != nil && t.final != (Claim{}) {
		if _, err := t.f.Write(AppendLine(nil, t.id, t.final)); err != nil {
			t.invalidate()
		}
	}
	t.close()
}

func (t *Tx) close() {
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
func (t *Tx) invalidate() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	t.x.remove(t.scope)
}

// remove deletes the index of scope, or marks the scope stale when it
// cannot.
func (x Index) remove(scope string) {
	if err := x.FS.RemoveAll(filepath.Join(scope, FileName)); err != nil {
		x.Marks.MarkStale(scope)
	}
}

// NoteDeleted appends a tombstone after session id's directory left scope
// directory scope. It only saves later lists a lookup: a claim of a
// directory that is gone is ignored anyway.
func (x Index) NoteDeleted(scope, id string) {
	t := &Tx{x: x, scope: scope, id: id, final: Claim{State: Deleted}, done: make(chan struct{})}
	close(t.done)
	lock, err := x.FS.LockShared(scope)
	if err != nil {
		return
	}
	t.lock = lock
	f, err := x.FS.OpenFile(filepath.Join(scope, FileName), os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		t.f = f
		t.Done(true)
		return
	}
	t.close()
}

// Adopt appends claims for names the index of scope directory sd does not
// know (a writer that does not maintain it made them), so that later
// lists need not read them; read gives a name's claim (false: none). It
// holds the scope's flock exclusively, without waiting, while read runs:
// no writer is then between its announcement and its publish, so the
// headers read are the published ones, and any change after it goes
// through a later record.
func (x Index) Adopt(sd string, names []string, read func(name string) (Claim, bool)) {
	lock, err := x.FS.Lock(sd)
	if err != nil {
		return
	}
	defer lock.Close()
	f, err := x.FS.OpenFile(filepath.Join(sd, FileName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	var buf []byte
	for _, name := range names {
		if !canonicalUUID([]byte(name)) {
			continue // no record can name it
		}
		if c, ok := read(name); ok {
			buf = AppendLine(buf, name, c)
		}
	}
	if len(buf) > 0 {
		// One write: the records land whole, among other appenders' (a
		// torn one makes lists rebuild).
		if _, err := f.Write(buf); err != nil {
			x.remove(sd)
		}
	}
}
