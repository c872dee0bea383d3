package store

import (
	"path/filepath"

	"github.com/loopdev/loop/convo"
)

// An Observer keeps data derived from a Root's sessions (an index) in step
// with what their writes publish. The store's own indexes are observers:
// the summary index behind ListPage and MostRecent (store/internal/summary,
// wired in store/summaries.go), which OpenRoot adds to every Root, and the search
// index (store/search), which the Root's user adds (the engine does). The
// commit path knows none of them; it calls its Root's observers at fixed
// points of the protocol (docs/storage.md), in the order they were added.
//
// Guarantees, for every write of a session on disk:
//
//   - Publishing is called before the header that names the change is
//     published (the session's directory renamed into place, for a first
//     commit); the store waits for the returned Publication's Ready
//     before that publish and calls its Done after it, published telling
//     whether the new header is now the committed one. Ready may be
//     waited for while the logs are fsynced: it costs the commit only what
//     it takes beyond them. An observer that must be durable before the
//     header (the summary index's upper-bound claim, docs/storage.md
//     "Summary index") writes and fsyncs its record before Ready returns;
//     one that needs nothing before the publish returns nil.
//   - Committed is called after a commit is durable and installed (its
//     logs fsynced, its header published and its directory fsynced), and
//     after its Publication's Done; SavedMeta after a header-only change
//     (a metadata save, Root.SetSessionArchived) is durable; Deleted after
//     the rename that takes a session's directory out of every listing.
//     Nothing is called for a write that failed: what it announced in
//     Publishing (and Done(false)) is all the observer learns.
//   - Calls for one session are made one at a time, in the order of its
//     writes: under the handle's write queue (store.Session.wmu), or, for
//     Root.SetSessionArchived and Root.DeleteSession, under the session's
//     lock, which no handle holds meanwhile. Calls for different sessions
//     may run at the same time.
//   - A write waits for an observer only while one of its methods runs
//     (Ready included), and never fails because of one: an error a method
//     returns, or a panic, is dropped by the store (the observer keeps its
//     own record of a failure, such as a stale mark). A Committed that did
//     not return nil is offered again: the handle's next commit passes the
//     messages from the first one this observer has not taken
//     (Commit.From).
//   - A crash may stop the process between a publish and its Committed
//     call. An observer must therefore be able to repair itself from the
//     committed history (the headers and logs) when it is next read; the
//     store's indexes find such gaps and rebuild or catch up.
//
// The values passed are the store's: valid for the call only, never to be
// modified.
type Observer interface {
	// Publishing announces that the header of session id in scope
	// directory scopeDir is about to change from old to next (old nil: the
	// session's directory is about to appear). It returns nil when the
	// observer needs nothing before the publish.
	Publishing(scopeDir, id string, old, next *Header) Publication
	// Committed reports a durable commit.
	Committed(c *Commit) error
	// SavedMeta reports a durable header-only change (no new messages).
	SavedMeta(scopeDir string, h *Header) error
	// Deleted reports that session id left scope directory scopeDir.
	Deleted(scopeDir, id string)
}

// A Publication is an observer's part of one header publish.
type Publication interface {
	// Ready returns once the observer's record of the change is where
	// it must be before the header is published.
	Ready()
	// Done ends the change: published says whether the header announced
	// is now the committed one.
	Done(published bool)
}

// Commit is what a commit published, for an Observer.
type Commit struct {
	// ScopeDir is the session's scope directory (sessions/<scope>).
	ScopeDir string
	// Header is the published header.
	Header *Header
	// Messages is the session's whole committed history.
	Messages []convo.Message
	// From is the first message this observer has not taken from this
	// session handle: the commit's new messages, preceded by those of
	// earlier commits whose Committed did not return nil. It is 0 for a
	// session's first commit on disk (a fork's: the end of its parent's
	// part, Header.Parent.MessageCount, which the observer has from the
	// parent), and the history's length when the handle was opened. A
	// rewind is a commit too: its Messages are the history it kept, and
	// the fork that holds what it dropped is committed as a new session.
	From int
}

// AddObserver adds o to the observers of r's writes. Sessions already open
// or created do not call it; add observers before opening sessions.
//
// A program that writes sessions should add the search index
// (store/search.New), as the engine does: other processes' searches then
// see its commits at once, where otherwise they see them only once they
// next compare their index with the headers (docs/storage.md, Search
// index).
func (r *Root) AddObserver(o Observer) {
	r.obsMu.Lock()
	defer r.obsMu.Unlock()
	r.observers = append(r.observers[:len(r.observers):len(r.observers)], o)
}

// feed returns the observers a session opened now calls.
func (r *Root) feed() feed {
	r.obsMu.Lock()
	defer r.obsMu.Unlock()
	return feed{obs: r.observers}
}

// feed is a session's observers; the zero value has none.
type feed struct {
	obs []Observer
}

// publishing calls every observer's Publishing.
func (f feed) publishing(scopeDir, id string, old, next *Header) publications {
	var ps publications
	for _, o := range f.obs {
		if p := publishingOf(o, scopeDir, id, old, next); p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// publishing calls the observers' Publishing for a change of s's header
// from old to next (old nil: s's directory is about to appear). Call it
// holding s.wmu.
func (s *Session) publishing(old, next *Header) publications {
	if len(s.feed.obs) == 0 {
		return nil
	}
	s.announced = *next
	return s.feed.publishing(filepath.Dir(s.dir), next.ID, old, &s.announced)
}

// publications are the observers' parts of one publish.
type publications []Publication

func (ps publications) ready() {
	for _, p := range ps {
		readyOf(p)
	}
}

func (ps publications) done(published bool) {
	for _, p := range ps {
		doneOf(p, published)
	}
}

// committed calls every observer's Committed with s's committed header and
// history. s.taken holds, per observer, the first message it has not
// taken; it advances for each that returns nil. Call it holding s.wmu,
// after the commit is installed.
func (s *Session) committed() {
	n := len(s.msgs)
	for i, o := range s.feed.obs {
		s.event = Commit{ScopeDir: filepath.Dir(s.dir), Header: &s.hdr, Messages: s.msgs, From: min(s.taken[i], n)}
		if committedTo(o, &s.event) {
			s.taken[i] = n
		}
	}
	s.event = Commit{} // let go of the history
}

// forkPlaced tells the observers that fork id, which a rewind of s made,
// is now in the scope beside s. made is the rewind's commit of it (its
// header and whole history, From the end of its parent's part), or nil
// when an earlier handle made it and a crash stopped that one before the
// move: the fork's header, read back, then goes out as a metadata save,
// and an observer finds its messages in its logs (docs/storage.md, Search
// index). Call it holding s.wmu (or while opening).
func (s *Session) forkPlaced(id string, made *Commit) {
	if len(s.feed.obs) == 0 {
		return
	}
	scopeDir := filepath.Dir(s.dir)
	if made != nil {
		made.ScopeDir = scopeDir
		for _, o := range s.feed.obs {
			committedTo(o, made)
		}
		return
	}
	path := filepath.Join(scopeDir, id, headerFile)
	data, err := s.fs.ReadFile(path)
	if err != nil {
		return
	}
	h, err := parseHeader(data, path)
	if err != nil {
		return
	}
	s.feed.savedMeta(scopeDir, &h)
}

func (f feed) savedMeta(scopeDir string, h *Header) {
	for _, o := range f.obs {
		savedMetaTo(o, scopeDir, h)
	}
}

func (f feed) deleted(scopeDir, id string) {
	for _, o := range f.obs {
		deletedTo(o, scopeDir, id)
	}
}

// taken returns the per-observer positions of a handle whose history holds
// n messages already taken (an opened session: n; a new one: 0).
func (f feed) taken(n int) []int {
	t := make([]int, len(f.obs))
	for i := range t {
		t[i] = n
	}
	return t
}

// Each call of an observer goes through one of these, which turn a panic
// into a failed delivery: a bug in an observer must not fail, or crash,
// the write it observes. A call that panicked counts as one that returned
// an error.

func publishingOf(o Observer, scopeDir, id string, old, next *Header) (p Publication) {
	defer func() {
		if recover() != nil {
			p = nil
		}
	}()
	return o.Publishing(scopeDir, id, old, next)
}

func readyOf(p Publication) {
	defer func() { recover() }()
	p.Ready()
}

func doneOf(p Publication, published bool) {
	defer func() { recover() }()
	p.Done(published)
}

// committedTo reports whether o took the commit.
func committedTo(o Observer, c *Commit) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return o.Committed(c) == nil
}

func savedMetaTo(o Observer, scopeDir string, h *Header) {
	defer func() { recover() }()
	_ = o.SavedMeta(scopeDir, h)
}

func deletedTo(o Observer, scopeDir, id string) {
	defer func() { recover() }()
	o.Deleted(scopeDir, id)
}
