package search

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/internal/storetest"
)

// crashBeforeSearchAppend commits msgs to s and then leaves the scope's
// index and tools file as a process that died between the commit and its
// append leaves them: without the commit's lines. The handle is closed, as
// the dead process's was.
func crashBeforeSearchAppend(t *testing.T, r *testRoot, s *store.Session, msgs []convo.Message) {
	t.Helper()
	dir := filepath.Dir(searchIndexPath(r, ""))
	sizes := map[string]int64{}
	for _, name := range []string{searchIndexName, searchToolsName} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sizes[name] = fi.Size()
	}
	mustCommit(t, s, msgs, nil, nil)
	for name, size := range sizes {
		if err := os.Truncate(filepath.Join(dir, name), size); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A process dies after a commit published its header and before it
// appended the commit's text to the search index. The next process's
// commit of that session must not make the index claim the lost messages,
// and a search (of a new process, or of one that searched before and so
// does not compare the scope with its headers again) finds them.
func TestSearchFindsMessagesWhoseIndexAppendDiedWithTheProcess(t *testing.T) {
	// setup: a session whose messages 2 and 3 were committed by a process
	// that died before appending them; warm searched before the crash.
	setup := func(t *testing.T) (r, warm *testRoot, s *store.Session, lost []convo.Message) {
		r, _ = newTestRoot(t)
		s = newSearchSession(t, r, "hello", "hi")
		search(t, r, Query{Text: "hello"}) // builds the index
		warm = openRoot(t, r.Dir())
		search(t, warm, Query{Text: "hello"})
		lost = append(s.Messages(), storetest.TextMessage(convo.RoleUser, "lost needle"), storetest.TextMessage(convo.RoleAssistant, "lost answer"))
		crashBeforeSearchAppend(t, r, s, lost)
		return r, warm, s, lost
	}
	want := func(t *testing.T, r *testRoot, text string, idx ...int) {
		t.Helper()
		got := search(t, r, Query{Text: text})
		var at []int
		for _, h := range got.Hits {
			at = append(at, h.MessageIndex)
		}
		slices.Sort(at)
		if !slices.Equal(at, idx) {
			t.Fatalf("search %q: hits at %v, want %v", text, at, idx)
		}
	}

	t.Run("no further commit, a new process", func(t *testing.T) {
		r, _, _, _ := setup(t)
		want(t, openRoot(t, r.Dir()), "lost", 2, 3)
	})

	t.Run("the next process commits again", func(t *testing.T) {
		r, warm, s, lost := setup(t)
		next := openRoot(t, r.Dir())
		s2, err := next.Open("", s.ID())
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		mustCommit(t, s2, append(lost, storetest.TextMessage(convo.RoleUser, "fresh needle")), nil, nil)
		// A process that searched before the crash does not read the
		// headers again: it sees the gap the commit's range leaves.
		want(t, warm, "needle", 2, 4)
		data, _ := os.ReadFile(searchIndexPath(r, ""))
		if n := strings.Count(string(data), "lost needle"); n != 1 {
			t.Fatalf("the lost message is in the index %d times:\n%s", n, data)
		}
		// Nothing lags now: a new process appends nothing.
		want(t, openRoot(t, r.Dir()), "needle", 2, 4)
		want(t, next, "needle", 2, 4)
		if after, _ := os.ReadFile(searchIndexPath(r, "")); string(after) != string(data) {
			t.Fatalf("caught up again:\n%s", after[len(data):])
		}
	})

	t.Run("the next process commits again and searches first", func(t *testing.T) {
		r, _, s, lost := setup(t)
		next := openRoot(t, r.Dir())
		s2, err := next.Open("", s.ID())
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		mustCommit(t, s2, append(lost, storetest.TextMessage(convo.RoleUser, "fresh needle")), nil, nil)
		want(t, next, "needle", 2, 4)
	})
}

// Catching up appends only what is missing: a gap in a long history costs
// the gap, not the history.
func TestSearchCatchUpAppendsOnlyTheGap(t *testing.T) {
	r, _ := newTestRoot(t)
	var texts []string
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("filler %d", i))
	}
	s := newSearchSession(t, r, texts...)
	search(t, r, Query{Text: "filler"})
	crashBeforeSearchAppend(t, r, s, append(s.Messages(), storetest.TextMessage(convo.RoleUser, "gap needle")))
	next := openRoot(t, r.Dir())
	s2, err := next.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	before, _ := os.ReadFile(searchIndexPath(r, ""))
	mustCommit(t, s2, append(s2.Messages(), storetest.TextMessage(convo.RoleAssistant, "after")), nil, nil)
	got := search(t, next, Query{Text: "gap needle"})
	if len(got.Hits) != 1 || got.Hits[0].MessageIndex != 40 {
		t.Fatalf("hits %v", hitIDs(got))
	}
	after, _ := os.ReadFile(searchIndexPath(r, ""))
	// The commit's two lines, then the gap's two.
	added := strings.Split(strings.TrimSuffix(string(after[len(before):]), "\n"), "\n")
	if len(added) != 4 || !strings.HasSuffix(added[1], "\t41\t42\t0\tc") || !strings.HasSuffix(added[3], "\t40\t41\t0\ta") {
		t.Fatalf("appended:\n%s", strings.Join(added, "\n"))
	}
}

func TestSearchCoverageJoinsRangesAndFindsTheGaps(t *testing.T) {
	for _, c := range []struct {
		name    string
		ranges  []msgRange
		covered int
		ahead   []msgRange
		holes   []msgRange // of 10 messages, with the tail
	}{
		{"contiguous", []msgRange{{0, 2}, {2, 5}}, 5, nil, []msgRange{{5, 10}}},
		{"metadata only", []msgRange{{0, 3}, {0, 0}}, 3, nil, []msgRange{{3, 10}}},
		{"a gap", []msgRange{{0, 2}, {4, 6}}, 2, []msgRange{{4, 6}}, []msgRange{{2, 4}, {6, 10}}},
		{"a gap filled", []msgRange{{0, 2}, {4, 6}, {2, 4}}, 6, nil, []msgRange{{6, 10}}},
		{"two gaps, out of order", []msgRange{{7, 8}, {4, 5}, {5, 6}}, 0, []msgRange{{4, 6}, {7, 8}}, []msgRange{{0, 4}, {6, 7}, {8, 10}}},
		{"repeated", []msgRange{{0, 4}, {2, 4}, {0, 4}}, 4, nil, []msgRange{{4, 10}}},
		{"all", []msgRange{{3, 10}, {0, 3}}, 10, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s coverage
			for _, r := range c.ranges {
				s.cover(r)
			}
			if s.covered != c.covered || !reflect.DeepEqual(s.ahead, c.ahead) {
				t.Fatalf("covered %d ahead %v, want %d %v", s.covered, s.ahead, c.covered, c.ahead)
			}
			if got := s.holes(10, true); !reflect.DeepEqual(got, c.holes) {
				t.Fatalf("holes %v, want %v", got, c.holes)
			}
		})
	}
}

func TestSearchSessionKeysRoundTrip(t *testing.T) {
	id := uuid.NewString()
	k, ok := keyOf([]byte(id))
	if !ok || k.String() != id {
		t.Fatalf("%s: %v %s", id, ok, k)
	}
	for _, bad := range []string{"", "not-a-uuid", id[:35] + "g", strings.ReplaceAll(id, "-", "+")} {
		if _, ok := keyOf([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// An index written before version 2 (its "h" lines name how many messages
// it covers, which a lost append could make untrue) is rebuilt by the first
// search, which then finds everything.
func TestSearchRebuildsAnIndexOfVersion1(t *testing.T) {
	r, _ := newTestRoot(t)
	s := newSearchSession(t, r, "old needle", "answer")
	path := searchIndexPath(r, "")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// What version 1 wrote for a session whose first message's append
	// was lost: an "h" line claiming both.
	h := s.Header()
	v1 := "loop-search\t1\nh\t" + s.ID() + "\t" + itoa(h.CreatedAt) + "\t" + itoa(h.UpdatedAt) + "\t2\t0\n"
	for _, name := range []string{searchIndexName, searchToolsName} {
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), name), []byte(v1), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := search(t, r, Query{Text: "needle"}); len(got.Hits) != 1 {
		t.Fatalf("hits %v", hitIDs(got))
	}
	if data, _ := os.ReadFile(path); !strings.HasPrefix(string(data), searchMagic) {
		t.Fatalf("not rebuilt:\n%s", data)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// An index of version 2 (its "h" lines do not say who wrote them, so a
// rewind's cut could not be told, and it has no "p" lines) is rebuilt by
// the first search too.
func TestSearchRebuildsAnIndexOfVersion2(t *testing.T) {
	r, _ := newTestRoot(t)
	s := newSearchSession(t, r, "old needle", "answer")
	path := searchIndexPath(r, "")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// Version 2's lines, claiming both messages without their text.
	h := s.Header()
	v2 := "loop-search\t2\nh\t" + s.ID() + "\t" + itoa(h.CreatedAt) + "\t" + itoa(h.UpdatedAt) + "\t0\t2\t0\n"
	for _, name := range []string{searchIndexName, searchToolsName} {
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), name), []byte(v2), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := search(t, r, Query{Text: "needle"}); len(got.Hits) != 1 {
		t.Fatalf("hits %v", hitIDs(got))
	}
	if data, _ := os.ReadFile(path); !strings.HasPrefix(string(data), searchMagic) {
		t.Fatalf("not rebuilt:\n%s", data)
	}
}

// A writer's "h" line cuts what the index held of a session at its
// "from" (a rewind), and a "p" line gives a fork what the index holds of
// its parent's part: a gap of the parent's there is the fork's too, and
// so are the messages the fork's writer counts past what it holds.
func TestSearchCoverageCutsAtARewindAndInheritsAParentsPart(t *testing.T) {
	var p coverage
	p.cover(msgRange{0, 4})
	p.cover(msgRange{6, 10})
	var cut coverage = p
	cut.ahead = slices.Clone(p.ahead)
	cut.cut(7)
	if cut.covered != 4 || !slices.Equal(cut.ahead, []msgRange{{6, 7}}) {
		t.Fatalf("cut at 7: %+v", cut)
	}
	var f coverage
	f.inherit(&p, 8)
	f.count = 12
	if got, want := f.holes(100, false), []msgRange{{4, 6}, {8, 12}}; !slices.Equal(got, want) {
		t.Fatalf("a fork at 8 of 12 messages: holes %v, want %v", got, want)
	}
}
