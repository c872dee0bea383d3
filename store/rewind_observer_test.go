package store

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/loopdev/loop/store/internal/storetest"
)

// forkObserver records the commits and metadata saves it is told of:
// "committed <id> <messages> from <From>" and "saved <id> <messages>".
type forkObserver struct{ events []string }

func (*forkObserver) Publishing(string, string, *Header, *Header) Publication { return nil }
func (o *forkObserver) Committed(c *Commit) error {
	o.events = append(o.events, fmt.Sprintf("committed %s %d from %d", c.Header.ID, len(c.Messages), c.From))
	return nil
}
func (o *forkObserver) SavedMeta(_ string, h *Header) error {
	o.events = append(o.events, fmt.Sprintf("saved %s %d", h.ID, h.MessageCount))
	return nil
}
func (*forkObserver) Deleted(string, string) {}

// A fork shares its parent's part instead of copying it, and its
// observers have that part from the parent: its first commit offers them
// only what the fork adds (Commit.From at the end of the parent's part),
// so that an index does not copy the shared history either
// (docs/storage.md, Search index).
func TestAForkOffersItsObserversOnlyWhatItAdds(t *testing.T) {
	r, _ := newTestRoot(t)
	o := &forkObserver{}
	r.AddObserver(o)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	o.events = nil
	f := mustFork(t, s, 8, "")
	defer f.Close()
	if want := []string{fmt.Sprintf("committed %s 8 from 8", f.ID())}; !reflect.DeepEqual(o.events, want) {
		t.Fatalf("observers told %q, want %q", o.events, want)
	}
}

// A rewind tells the observers of its cut (a commit of the history it
// keeps) and, once the fork that holds what it dropped is in the scope,
// of that fork (a commit of its whole history, from the end of the part
// it shares): a search index then drops the cut text from the session and
// finds it in the fork (docs/storage.md, Search index).
func TestARewindTellsTheObserversOfItsCutAndOfItsFork(t *testing.T) {
	r, _ := newTestRoot(t)
	o := &forkObserver{}
	r.AddObserver(o)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	o.events = nil
	forkID, err := s.Rewind(4)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("committed %s 4 from 4", s.ID()),
		fmt.Sprintf("committed %s 12 from 4", forkID),
	}
	if !reflect.DeepEqual(o.events, want) {
		t.Fatalf("observers told %q, want %q", o.events, want)
	}
}

// A crash between a rewind's header and the move of its fork into the
// scope leaves the move to the next open; that open tells the observers
// of the fork then (its header, as a metadata save: the observer reads
// its messages from its logs), or a search index would miss it.
func TestTheOpenThatMovesARewindsForkTellsTheObservers(t *testing.T) {
	r, ffs := newTestRoot(t)
	o := &forkObserver{}
	r.AddObserver(o)
	s := storedWith(t, r, t.TempDir(), 3)
	ffs.Arm(func(op, path string) *storetest.Fault {
		if op == "rename" && strings.Contains(filepath.Base(path), forkDirPrefix) {
			return &storetest.Fault{Err: storetest.ErrInjected}
		}
		return nil
	})
	o.events = nil
	forkID, err := s.Rewind(4)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fmt.Sprintf("committed %s 4 from 4", s.ID())}; !reflect.DeepEqual(o.events, want) {
		t.Fatalf("observers told %q while the fork waits, want %q", o.events, want)
	}
	ffs.Arm(nil)
	s.Close()
	o.events = nil
	s2, err := r.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if want := []string{fmt.Sprintf("saved %s 12", forkID)}; !reflect.DeepEqual(o.events, want) {
		t.Fatalf("the open that moved the fork told %q, want %q", o.events, want)
	}
}
