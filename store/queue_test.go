package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store/internal/storetest"
)

// testQueue is a queue state with every member set somewhere and left out
// somewhere else, and text an HTML-escaping encoder would change.
func testQueue() QueueState {
	return QueueState{
		Items: []QueuedInput{
			{ID: "req-3", RunID: "run-3", Text: "next: fix <main.go> & \"test\"\u2028\U0001F600", QueuedAt: 1795972386000,
				Images: []QueuedImage{{Data: "iVBORw0KGgo=", MimeType: "image/png"}},
				Files:  []QueuedFile{{Name: "a.go", Text: "package a\n"}},
				Skills: []string{"review", "go"}},
			{ID: "req-4", RunID: "run-4", Text: "then this", Steer: true, QueuedAt: 1795972387000},
		},
		Requests: []AcceptedRequest{
			{ID: "req-1", Digest: strings.Repeat("0a", 32), RunID: "run-1"},
			{ID: "req-3", Digest: strings.Repeat("3c", 32), RunID: "run-3", Queued: true},
			{ID: "req-4", Digest: strings.Repeat("4d", 32), RunID: "run-4", Queued: true},
		},
	}
}

// queuePath is a session's queue.json.
func queuePath(s *Session) string { return filepath.Join(s.Dir(), queueFile) }

func TestQueueFileMatchesEncodingJSON(t *testing.T) {
	// The second has an edit's request (session/edit), which names the
	// fork its rewind made.
	edited := testQueue()
	edited.Requests[0].ForkedID = "fork-1"
	for _, q := range []QueueState{testQueue(), edited} {
		got, err := encodeQueue("sid", &q)
		if err != nil {
			t.Fatal(err)
		}
		rec := queueRecord{Format: queueFormat, Version: queueVersion, SessionID: "sid"}
		for _, it := range q.Items {
			r := queuedInputRecord{ID: it.ID, RunID: it.RunID, Text: it.Text, Skills: it.Skills, Steer: it.Steer, QueuedAt: it.QueuedAt}
			for _, im := range it.Images {
				r.Images = append(r.Images, queuedImageRecord(im))
			}
			for _, f := range it.Files {
				r.Files = append(r.Files, queuedFileRecord(f))
			}
			rec.Queue = append(rec.Queue, r)
		}
		for _, r := range q.Requests {
			rec.Requests = append(rec.Requests, acceptedRequestRecord(r))
		}
		rec.CRC = 0
		want, err := jsonenc.Marshal(&rec)
		if err != nil {
			t.Fatal(err)
		}
		// The checksum covers what comes before its member.
		cut := bytes.LastIndex(got, []byte(queueCRCKey))
		if cut < 0 || !bytes.Equal(got[:cut], want[:bytes.LastIndex(want, []byte(queueCRCKey))]) {
			t.Fatalf("encoded\n%s\nencoding/json\n%s", got, want)
		}
		back, err := decodeQueue(got, "sid", "queue.json")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, q) {
			t.Fatalf("read back\n%+v\nwant\n%+v", back, q)
		}
	}
}

// The queue a writer saved is what the next holder of the session's lock
// reads; a handle that does not hold the lock (the writer is alive) reads
// none and writes none.
func TestSavedQueueComesBackToTheNextHolderOfTheLock(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, history(1), nil, nil)
	q := testQueue()
	if err := s.SaveQueue(&q); err != nil {
		t.Fatal(err)
	}
	if got := s.StoredQueue(); len(got.Items) != 0 {
		t.Fatalf("the writer's own handle reads its queue back: %+v", got)
	}

	locked := reopen(t, r, s)
	if !locked.ReadOnly() || !reflect.DeepEqual(locked.StoredQueue(), QueueState{}) {
		t.Fatalf("a second handle while the writer lives: read-only %v, queue %+v", locked.ReadOnly(), locked.StoredQueue())
	}
	if err := locked.SaveQueue(&QueueState{}); !errors.Is(err, ErrSessionLocked) {
		t.Fatalf("a read-only handle saved its queue: %v", err)
	}
	s.Close()

	// The writer is gone: the locked handle takes the lock at its next
	// write and reads the queue then.
	if err := locked.TryWritable(); err != nil {
		t.Fatal(err)
	}
	if got := locked.StoredQueue(); !reflect.DeepEqual(got, q) {
		t.Fatalf("after taking the lock\n%+v\nwant\n%+v", got, q)
	}
	locked.Close()

	o := reopen(t, r, s)
	if got := o.StoredQueue(); !reflect.DeepEqual(got, q) {
		t.Fatalf("reopened\n%+v\nwant\n%+v", got, q)
	}
	if err := o.SaveQueue(&QueueState{}); err != nil {
		t.Fatal(err)
	}
	o.Close()
	if got := reopen(t, r, s).StoredQueue(); !reflect.DeepEqual(got, QueueState{}) {
		t.Fatalf("an emptied queue reads back as %+v", got)
	}
}

// A draft has no directory: its queue lives in memory, and saving it
// writes nothing, so an unsaved draft still leaves nothing behind.
func TestDraftQueueWritesNothing(t *testing.T) {
	r, _ := newTestRoot(t)
	d := r.Draft("", t.TempDir())
	defer d.Close()
	q := testQueue()
	if err := d.SaveQueue(&q); err != nil {
		t.Fatal(err)
	}
	if d.OnDisk() {
		t.Fatal("a draft is on disk")
	}
	if _, err := os.Stat(d.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the draft's directory: %v", err)
	}
	if InMemory(t.TempDir()).SaveQueue(&q) != nil {
		t.Fatal("an in-memory session refused")
	}
}

// Every step of the atomic replace of queue.json failed: the save fails,
// the previous queue stays what a reader finds (but for the last step,
// after which the new one is visible and only its durability is in
// doubt), and a retry writes it.
func TestQueueSaveFaultInjection(t *testing.T) {
	faults := []struct {
		name, op, suffix string
		flt              storetest.Fault
		published        bool
	}{
		{"create temp file", "open", queueFile + ".tmp", storetest.Fault{Err: syscall.ENOSPC}, false},
		{"temp file write (torn, full disk)", "write", queueFile + ".tmp", storetest.Fault{Err: syscall.ENOSPC, Partial: 40}, false},
		{"temp file fsync", "sync", queueFile + ".tmp", storetest.Fault{Err: syscall.EIO}, false},
		{"rename over queue.json", "rename", queueFile + ".tmp", storetest.Fault{Err: syscall.EIO}, false},
		{"fsync session dir", "syncdir", "", storetest.Fault{Err: syscall.EIO}, true},
	}
	for _, fc := range faults {
		t.Run(fc.name, func(t *testing.T) {
			r, ffs := newTestRoot(t)
			s, err := r.Create("", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			prev := QueueState{Requests: []AcceptedRequest{{ID: "req-0", Digest: strings.Repeat("ff", 32), RunID: "run-0"}}}
			if err := s.SaveQueue(&prev); err != nil {
				t.Fatal(err)
			}
			next := testQueue()
			ffs.FailOnce(fc.op, fc.suffix, fc.flt)
			if err := s.SaveQueue(&next); !errors.Is(err, fc.flt.Err) || !strings.Contains(err.Error(), queueFile) {
				t.Fatalf("save error %v, want %v naming %s", err, fc.flt.Err, queueFile)
			}
			ffs.Arm(nil)
			want := prev
			if fc.published {
				want = next
			}
			data, err := os.ReadFile(queuePath(s))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := decodeQueue(data, s.ID(), queuePath(s)); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("after the fault the file holds %+v (%v), want %+v", got, err, want)
			}
			if err := s.SaveQueue(&next); err != nil {
				t.Fatalf("retry: %v", err)
			}
			s.Close()
			if got := reopen(t, r, s).StoredQueue(); !reflect.DeepEqual(got, next) {
				t.Fatalf("after the retry %+v", got)
			}
		})
	}
}

// A queue.json that is torn, corrupt, of another version or of another
// session is never applied: the session opens read-only with a reason
// that names the file, its history reads as ever, no write replaces the
// file, and once the file is set right (here: removed) the session takes
// writes again.
func TestBadQueueFileIsRefusedAndKeepsTheSessionReadOnly(t *testing.T) {
	good := func(t *testing.T, s *Session) []byte {
		q := testQueue()
		data, err := encodeQueue(s.ID(), &q)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	cases := []struct {
		name string
		make func(t *testing.T, s *Session) []byte
		want error
	}{
		{"torn", func(t *testing.T, s *Session) []byte { d := good(t, s); return d[:len(d)/2] }, ErrMalformed},
		{"torn after the object", func(t *testing.T, s *Session) []byte { d := good(t, s); return append(d, `{"x"`...) }, ErrMalformed},
		{"a byte flipped inside a text", func(t *testing.T, s *Session) []byte {
			return bytes.Replace(good(t, s), []byte("then this"), []byte("then thus"), 1)
		}, ErrMalformed},
		{"no checksum", func(t *testing.T, s *Session) []byte {
			d := good(t, s)
			return append(d[:bytes.LastIndex(d, []byte(queueCRCKey))], "}\n"...)
		}, ErrMalformed},
		{"another version", func(t *testing.T, s *Session) []byte {
			return bytes.Replace(good(t, s), []byte(`"version":1`), []byte(`"version":2`), 1)
		}, ErrUnsupportedFormat},
		{"another format", func(t *testing.T, s *Session) []byte { return []byte(`{"format":"x","version":1}`) }, ErrUnsupportedFormat},
		{"another session", func(t *testing.T, s *Session) []byte {
			q := testQueue()
			d, _ := encodeQueue("0195f0e2-7c3a-7000-8000-000000000009", &q)
			return d
		}, ErrMalformed},
		{"not JSON", func(t *testing.T, s *Session) []byte { return []byte("\x00\x01") }, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			s, err := r.Create("", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mustCommit(t, s, history(2), nil, nil)
			bad := c.make(t, s)
			s.Close()
			if err := os.WriteFile(queuePath(s), bad, 0o600); err != nil {
				t.Fatal(err)
			}

			o, err := r.Open("", s.ID())
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer o.Close()
			why := o.ReadOnlyReason()
			if !o.ReadOnly() || !errors.Is(why, c.want) || !errors.Is(why, ErrNotWritable) || !strings.Contains(why.Error(), queuePath(s)) {
				t.Fatalf("read-only %v, reason %v; want %v naming %s", o.ReadOnly(), why, c.want, queuePath(s))
			}
			wantMessages(t, o.Messages(), history(2))
			if got := o.StoredQueue(); !reflect.DeepEqual(got, QueueState{}) {
				t.Fatalf("applied %+v", got)
			}
			q := QueueState{}
			for what, err := range map[string]error{
				"save queue": o.SaveQueue(&q),
				"commit":     o.Commit(history(3), nil, nil),
				"try":        o.TryWritable(),
			} {
				if !errors.Is(err, c.want) {
					t.Errorf("%s: %v, want %v", what, err, c.want)
				}
			}
			if data, _ := os.ReadFile(queuePath(s)); !bytes.Equal(data, bad) {
				t.Fatal("the refused file was replaced")
			}

			if err := os.Remove(queuePath(s)); err != nil {
				t.Fatal(err)
			}
			if err := o.TryWritable(); err != nil {
				t.Fatalf("with the file gone: %v", err)
			}
			mustCommit(t, o, history(3), nil, nil)
		})
	}
}

// TestQueueFileRefusesTooManyRequests: the request ids are bounded on
// disk as in memory.
func TestQueueFileRefusesTooManyRequests(t *testing.T) {
	var q QueueState
	for i := range MaxAcceptedRequests + 1 {
		q.Requests = append(q.Requests, AcceptedRequest{ID: "r" + strings.Repeat("x", i), Digest: strings.Repeat("ab", 32), RunID: "run"})
	}
	if _, err := encodeQueue("sid", &q); !errors.Is(err, ErrInvalid) {
		t.Fatalf("encode %d ids: %v", len(q.Requests), err)
	}
	q.Requests = q.Requests[:MaxAcceptedRequests]
	data, err := encodeQueue("sid", &q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeQueue(data, "sid", "q"); err != nil {
		t.Fatal(err)
	}
	dup := QueueState{Requests: []AcceptedRequest{q.Requests[0], q.Requests[0]}}
	data, _ = encodeQueue("sid", &dup)
	if _, err := decodeQueue(data, "sid", "q"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a request id twice: %v", err)
	}
}
