package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/storetest"
)

var errObserver = errors.New("observer failed")

// badObserver fails every call it gets: by panicking, or by returning an
// error where it can.
type badObserver struct{ panics bool }

func (o *badObserver) fail() error {
	if o.panics {
		panic("observer bug")
	}
	return errObserver
}

func (o *badObserver) Publishing(string, string, *Header, *Header) Publication {
	if o.panics {
		panic("observer bug")
	}
	return badPublication{}
}
func (o *badObserver) Committed(*Commit) error         { return o.fail() }
func (o *badObserver) SavedMeta(string, *Header) error { return o.fail() }
func (o *badObserver) Deleted(string, string)          { o.fail() }

// badPublication panics in both halves of a publish.
type badPublication struct{}

func (badPublication) Ready()    { panic("observer bug") }
func (badPublication) Done(bool) { panic("observer bug") }

// A failing or panicking observer (an index, or any other) never fails a
// write nor keeps the observers after it from their calls: every write
// succeeds, what it wrote is committed, and the summary index, which comes
// after it, still sees every change (store/search has the same test for
// the search index).
func TestFailingObserverNeverFailsAWrite(t *testing.T) {
	for _, panics := range []bool{false, true} {
		t.Run(map[bool]string{false: "error", true: "panic"}[panics], func(t *testing.T) {
			r, _ := newTestRoot(t)
			r.observers = append([]Observer{&badObserver{panics: panics}}, r.observers...)
			s := r.Draft("", t.TempDir())
			first := []convo.Message{storetest.TextMessage(convo.RoleUser, "first needle")}
			mustCommit(t, s, first, nil, nil)
			msgs := append(s.Messages(), storetest.TextMessage(convo.RoleAssistant, "second needle"))
			mustCommit(t, s, msgs, nil, nil)
			if err := s.SaveMeta(func(h *Header) { h.Title = "kept" }); err != nil {
				t.Fatalf("save meta: %v", err)
			}
			other := newTextSession(t, r, "other")
			other.Close()
			if err := r.SetSessionArchived("", other.ID(), true); err != nil {
				t.Fatalf("archive: %v", err)
			}
			gone := newTextSession(t, r, "gone")
			if err := gone.Delete(); err != nil {
				t.Fatalf("delete: %v", err)
			}

			o := reopen(t, r, s)
			wantMessages(t, o.Messages(), msgs)
			if o.Header().Title != "kept" {
				t.Fatalf("title %q", o.Header().Title)
			}
			checkPagesMatchList(t, r, "", 1, 2)
			page, err := r.ListPage("", PageOptions{Archived: true, Limit: 5})
			if err != nil || len(page) != 1 || page[0].ID != other.ID() {
				t.Fatalf("archived page %+v, %v", page, err)
			}
		})
	}
}

// recordingObserver records what it is told, and can refuse commits.
type recordingObserver struct {
	t      *testing.T
	hpath  string // the header the writes publish
	refuse int    // Committed calls left to refuse
	froms  []int
	events []string
}

func (o *recordingObserver) Publishing(scopeDir, id string, old, next *Header) Publication {
	o.events = append(o.events, "publishing")
	return recordingPublication{o, next}
}

func (o *recordingObserver) Committed(c *Commit) error {
	o.events = append(o.events, "committed")
	o.froms = append(o.froms, c.From)
	o.checkPublished(c.Header)
	if o.refuse > 0 {
		o.refuse--
		return errObserver
	}
	return nil
}

func (o *recordingObserver) SavedMeta(_ string, h *Header) error {
	o.events = append(o.events, "saved")
	o.checkPublished(h)
	return nil
}

func (o *recordingObserver) Deleted(string, string) { o.events = append(o.events, "deleted") }

// checkPublished fails unless h is the header on disk.
func (o *recordingObserver) checkPublished(h *Header) {
	if o.hpath == "" {
		return
	}
	data, err := os.ReadFile(o.hpath)
	if err != nil {
		o.t.Errorf("header not published: %v", err)
		return
	}
	got, err := parseHeader(data, o.hpath)
	if err != nil || got.MessageCount != h.MessageCount || got.Title != h.Title {
		o.t.Errorf("observer told before the publish: disk %d messages %q, told %d %q (%v)", got.MessageCount, got.Title, h.MessageCount, h.Title, err)
	}
}

type recordingPublication struct {
	o    *recordingObserver
	next *Header
}

// Ready fails if the header it announces is visible already.
func (p recordingPublication) Ready() {
	p.o.events = append(p.o.events, "ready")
	if p.o.hpath == "" {
		return
	}
	data, err := os.ReadFile(p.o.hpath)
	if err != nil {
		return // the session's directory is not there yet
	}
	if got, err := parseHeader(data, p.o.hpath); err == nil && got.MessageCount == p.next.MessageCount && got.Title == p.next.Title {
		p.o.t.Errorf("header published before Ready")
	}
}

func (p recordingPublication) Done(published bool) {
	p.o.events = append(p.o.events, "done")
	if !published {
		p.o.t.Errorf("Done(false) after a publish that succeeded")
	}
}

// An observer hears of a change before its header is published and after
// it is durable, in order; a Committed that failed is offered again, from
// the first message it did not take, with the next commit.
func TestObserverIsToldAroundThePublishAndOfferedWhatItMissed(t *testing.T) {
	r, _ := newTestRoot(t)
	o := &recordingObserver{t: t}
	r.AddObserver(o)
	s := r.Draft("", t.TempDir())
	o.hpath = filepath.Join(s.Dir(), headerFile)
	mustCommit(t, s, history(1), nil, nil) // the first commit on disk: From 0
	o.refuse = 1
	mustCommit(t, s, history(2), nil, nil) // refused: messages 4..8 stay offered
	mustCommit(t, s, history(3), nil, nil) // offered from 4 again
	mustCommit(t, s, history(4), nil, nil)
	if err := s.SaveMeta(func(h *Header) { h.Title = "t" }); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 4, 4, 12}; !slices.Equal(o.froms, want) {
		t.Fatalf("From %v, want %v", o.froms, want)
	}
	want := []string{
		"publishing", "ready", "done", "committed", // a first commit: its directory appears
		"publishing", "ready", "done", "committed",
		"publishing", "ready", "done", "committed",
		"publishing", "ready", "done", "committed",
		"publishing", "ready", "done", "saved",
		"deleted",
	}
	if !slices.Equal(o.events, want) {
		t.Fatalf("events\n got %v\nwant %v", o.events, want)
	}
	// A handle opened later starts at the history it loaded.
	o.hpath = ""
	s2 := newTextSession(t, r, "a", "b")
	s2.Close()
	o.froms = nil
	s3, err := r.Open("", s2.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	o.hpath = filepath.Join(s3.Dir(), headerFile)
	mustCommit(t, s3, append(s3.Messages(), storetest.TextMessage(convo.RoleUser, "c")), nil, nil)
	if want := []int{2}; !slices.Equal(o.froms, want) {
		t.Fatalf("From after open %v, want %v", o.froms, want)
	}
}

// newTextSession commits texts (user, assistant, user, ...) as a new
// independent session.
func newTextSession(t testing.TB, r *Root, texts ...string) *Session {
	t.Helper()
	s := r.Draft("", t.TempDir())
	mustCommit(t, s, storetest.Turns(texts...), nil, nil)
	return s
}
