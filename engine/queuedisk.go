package engine

import (
	"slices"
	"sync"

	"github.com/loopdev/loop/store"
)

// A session's queued inputs and its accepted request ids are kept in its
// queue.json (docs/storage.md, "queue.json"; docs/protocol.md 8.6), so a
// process that opens the session after a crash or an exit gives the inputs
// back, held, and answers a retried request id with its original run.
//
// Every change of the queue or of the dedup cache counts one step of
// qd.seq under s.mu. A write copies the latest state under s.mu and writes
// it without it, holding qd.wmu, the file's write queue: a writer that
// finds a state at least as new already written returns at once, so an
// older state never replaces a newer one and writers that queue up behind
// one another share one write. A prompt is answered only once the state
// holding its input and its request id is written (Session.Prompt).

// queueDisk orders the writes of the session's queue.json.
type queueDisk struct {
	seq     uint64     // under Session.mu: the changes of the queue and the dedup cache
	wmu     sync.Mutex // the write queue, held across one write
	written uint64     // under wmu: the seq of the state on disk
}

// queueChangedLocked counts a change of what queue.json holds and returns
// the seq of the new state.
func (s *Session) queueChangedLocked() uint64 {
	s.qd.seq++
	return s.qd.seq
}

// queueSeq is the seq of the current state.
func (s *Session) queueSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.qd.seq
}

// saveQueue makes a state of queue.json at least as new as seq durable.
// A session that is not on disk (in memory, or a draft before its first
// save) has nothing to keep it in and writes nothing; once it is on disk
// the next call writes the whole state. It does I/O: call it holding no
// lock.
func (s *Session) saveQueue(seq uint64) error {
	s.qd.wmu.Lock()
	defer s.qd.wmu.Unlock()
	if s.qd.written >= seq || !s.st.OnDisk() {
		return nil
	}
	s.mu.Lock()
	q, cur := s.storedQueueLocked(), s.qd.seq
	s.mu.Unlock()
	if err := s.st.SaveQueue(q); err != nil {
		return err
	}
	s.qd.written = cur
	return nil
}

// saveQueueLogged is saveQueue for a change that stands whether or not it
// is written (docs/protocol.md 8.6): a failure is logged, and the next
// write holds the whole state.
func (s *Session) saveQueueLogged(seq uint64, what string) {
	if err := s.saveQueue(seq); err != nil {
		s.e.log.Warn("queue not saved", "session", s.id, "after", what, "err", err)
	}
}

// storedQueueLocked copies what queue.json holds: the queue (an input whose
// write is under way included: the write is what makes it accepted) and the
// dedup cache. The strings are shared, not copied: they never change.
func (s *Session) storedQueueLocked() *store.QueueState {
	q := &store.QueueState{Items: make([]store.QueuedInput, 0, len(s.queue)), Requests: make([]store.AcceptedRequest, 0, len(s.dedup.order))}
	for _, it := range s.queue {
		in := store.QueuedInput{ID: it.ID, RunID: it.RunID, Text: it.Text, Skills: it.Skills, Steer: it.Steer, QueuedAt: it.QueuedAt}
		for _, im := range it.Images {
			in.Images = append(in.Images, store.QueuedImage{Data: im.Data, MimeType: im.MimeType})
		}
		for _, f := range it.Files {
			in.Files = append(in.Files, store.QueuedFile{Name: f.Name, Text: f.Text})
		}
		q.Items = append(q.Items, in)
	}
	for _, id := range s.dedup.order {
		e := s.dedup.byID[id]
		q.Requests = append(q.Requests, store.AcceptedRequest{ID: id, Digest: e.digest, RunID: e.runID, Queued: e.queued, ForkedID: e.forkedID})
	}
	return q
}

// restoreQueueLocked takes back what a previous writer left in queue.json:
// its inputs, each held under a new holdId (the restart holds them, so that
// nothing runs that the user has not seen again: cancel-edit or edit
// releases one, delete drops it), and its request ids. An input whose run
// is in the history already (it started, and its dispatch was not written
// before the process ended) is not queued again.
func (s *Session) restoreQueueLocked(q store.QueueState) {
	ran := map[string]bool{}
	for _, t := range s.st.Timings() {
		ran[t.ID] = true
	}
	for _, in := range q.Items {
		if ran[in.RunID] || s.findItem(in.ID) >= 0 {
			continue
		}
		it := &QueueItem{
			ID: in.ID, RunID: in.RunID, Text: in.Text, Skills: slices.Clone(in.Skills), Steer: in.Steer, QueuedAt: in.QueuedAt,
			Held: true, HoldID: newID(),
		}
		for _, im := range in.Images {
			it.Images = append(it.Images, Image{Type: "image", Data: im.Data, MimeType: im.MimeType})
		}
		for _, f := range in.Files {
			it.Files = append(it.Files, File(f))
		}
		s.queue = append(s.queue, it)
	}
	for _, r := range q.Requests {
		if _, ok := s.dedup.get(r.ID); !ok {
			s.dedup.add(r.ID, dedupEntry{digest: r.Digest, runID: r.RunID, queued: r.Queued, forkedID: r.ForkedID})
		}
	}
	if len(q.Items) > 0 || len(q.Requests) > 0 {
		s.queueChangedLocked()
	}
}

// adoptStoredQueue restores the queue a previous writer left when this
// instance, opened read-only while that writer lived, has just taken the
// session's lock (relock.go). An instance that took none has neither
// inputs nor request ids of its own: nothing was admitted while it was
// read-only.
func (s *Session) adoptStoredQueue() {
	q := s.st.StoredQueue()
	if len(q.Items) == 0 && len(q.Requests) == 0 {
		return
	}
	s.mu.Lock()
	n := len(s.queue)
	s.restoreQueueLocked(q)
	changed := len(s.queue) != n
	s.mu.Unlock()
	if changed {
		s.publishQueue()
	}
}
