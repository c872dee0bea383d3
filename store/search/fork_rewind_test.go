package search

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/internal/storetest"
)

// What a rewind drops stays readable as a fork (docs/storage.md, "Forks
// and rewinds"), and a search finds it there: also in a process that has
// searched the scope before the rewind, at the first search after it.
func TestSearchFindsWhatARewindDroppedInItsFork(t *testing.T) {
	r, _ := newTestRoot(t)
	s := newSearchSession(t, r, "hello world", "an answer", "a zebra crossing", "noted")
	defer s.Close()
	// This process has compared the index with the headers.
	if got := search(t, r, Query{Text: "zebra"}); len(got.Hits) != 1 {
		t.Fatalf("before the rewind: %+v", got.Hits)
	}
	forkID, err := s.Rewind(2)
	if err != nil {
		t.Fatal(err)
	}
	got := search(t, r, Query{Text: "zebra"})
	if len(got.Hits) != 1 || got.Hits[0].SessionID != forkID || got.Hits[0].MessageIndex != 2 {
		again := search(t, r, Query{Text: "zebra"})
		t.Fatalf("the first search after the rewind: hits %+v, want message 2 of the fork %s (a second search finds %d)", got.Hits, forkID, len(again.Hits))
	}
}

// A fork shares its parent's messages instead of copying them, and writes
// under 4 KB however long the history (docs/storage.md, "Forks and
// rewinds"); the search index, which the engine keeps beside every
// commit, must not then get a copy of the whole shared history's text.
func TestAForkDoesNotCopyItsSharedHistoryIntoTheSearchIndex(t *testing.T) {
	r, _ := newTestRoot(t)
	texts := make([]string, 2000)
	for i := range texts {
		texts[i] = fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 4))
	}
	s := newSearchSession(t, r, texts...)
	defer s.Close()
	scope, err := r.ScopeDir("")
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(scope, searchDirName, searchIndexName)
	search(t, r, Query{Text: "lorem"}) // the index is built by the first search
	before := storetestSize(t, index)
	f, err := s.Fork(len(texts), "")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if grew := storetestSize(t, index) - before; grew > 4096 {
		t.Fatalf("forking a %d-message session appended %d bytes to the search index (the shared history's text again)", len(texts), grew)
	}
}

func storetestSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// After a rewind, the session's later messages take the indexes of those
// it dropped; a search names each message once, not once for the dropped
// text's index line and once for the new one.
func TestSearchNamesAMessageOnceAfterARewindReplacedIt(t *testing.T) {
	r, _ := newTestRoot(t)
	s := newSearchSession(t, r, "hello world", "an answer", "alpha beta", "noted")
	defer s.Close()
	search(t, r, Query{Text: "alpha"}) // the index is built and checked
	forkID, err := s.Rewind(2)
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, append(s.Messages(), storetest.Turns("alpha alpha gamma")...), nil, nil)
	got := search(t, r, Query{Text: "alpha"})
	seen := map[string]int{}
	for _, h := range got.Hits {
		seen[fmt.Sprintf("%s#%d", h.SessionID, h.MessageIndex)]++
	}
	for k, n := range seen {
		if n > 1 {
			t.Fatalf("message %s is named %d times: %+v (fork %s)", k, n, got.Hits, forkID)
		}
	}
}

// hitSet is the hits as "<session>#<index> <snippet>", in order.
func hitSet(res Result) []string {
	var out []string
	for _, h := range res.Hits {
		out = append(out, fmt.Sprintf("%s#%d %s", h.SessionID, h.MessageIndex, h.Snippet))
	}
	return out
}

// Another process rewinds a session and commits new text in place of what
// it dropped while this process's index is warm (it has compared the
// scope with its headers): this process's next search names the message
// once, with its new text, and finds the dropped text in the rewind's fork.
func TestAWarmSearchSeesAnotherProcesssRewind(t *testing.T) {
	r, _ := newTestRoot(t)
	s := newSearchSession(t, r, "hello world", "an answer", "alpha beta", "noted")
	search(t, r, Query{Text: "alpha"})
	s.Close()
	other := openRoot(t, r.Dir())
	s2, err := other.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	forkID, err := s2.Rewind(2)
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s2, append(s2.Messages(), storetest.Turns("alpha gamma")...), nil, nil)
	got := hitSet(search(t, r, Query{Text: "alpha"}))
	// The session was updated last: it ranks first at equal scores.
	want := []string{s.ID() + "#2 alpha gamma", forkID + "#2 alpha beta"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("hits %q, want %q", got, want)
	}
}

// The open that finishes a rewind a crash interrupted tells the index of
// the fork by its header alone (store.Session.forkPlaced): the index then
// lacks the fork's messages, and a search of a process whose index is
// warm finds them missing and reads them from the fork's logs.
func TestAWarmSearchFindsTheMessagesOfAForkItWasToldOfByItsHeader(t *testing.T) {
	r, _ := newTestRoot(t)
	s := newSearchSession(t, r, "hello world", "an answer", "a zebra crossing", "noted")
	search(t, r, Query{Text: "zebra"})
	s.Close()
	// A process without the index rewinds: this one is told nothing.
	bare, err := store.OpenRoot(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := bare.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	forkID, err := s2.Rewind(2)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.ReadHeader("", forkID)
	if err != nil {
		t.Fatal(err)
	}
	scope, err := r.ScopeDir("")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ix.SavedMeta(scope, &h); err != nil {
		t.Fatal(err)
	}
	got := hitSet(search(t, r, Query{Text: "zebra"}))
	if want := []string{forkID + "#2 a zebra crossing"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("hits %q, want %q", got, want)
	}
}
