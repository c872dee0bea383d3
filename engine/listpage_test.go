package engine_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
)

// walkPages pages a list through ListPage and its cursors.
func walkPages(t *testing.T, e *engine.Engine, ws string, archived bool, limit int) []engine.Summary {
	t.Helper()
	var out []engine.Summary
	cursor := ""
	for range 100 {
		page, next, err := e.ListPage(ws, archived, cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		cursor = next
	}
	t.Fatal("pages never end")
	return nil
}

// TestListPageEqualsTheFullListCutIntoPages: session/list with a limit,
// read through the store's summary index, gives the pages PageSummaries
// cuts from the full list, with the sessions open in this process (a
// draft whose first prompt ran, archived and pinned ones) and after a
// restart, when none is.
func TestListPageEqualsTheFullListCutIntoPages(t *testing.T) {
	turns := strings.TrimSuffix(strings.Repeat(`{"steps":[{"text":"ok"}]},`, 12), ",")
	h := newHarness(t, `{"turns":[`+turns+`]}`)
	var ss []*engine.Session
	for i := range 6 {
		s := h.newSession()
		h.prompt(s, fmt.Sprint("r", i), "hi")
		ss = append(ss, s)
	}
	if err := h.e.Archive(h.ws, ss[1].ID(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := ss[2].SetPinned(true); err != nil {
		t.Fatal(err)
	}
	h.prompt(ss[0], "again", "more") // the oldest becomes the newest
	h.newSession()                   // an empty draft is never listed
	check := func() {
		t.Helper()
		for _, archived := range []bool{false, true} {
			list, err := h.e.List(h.ws, archived)
			if err != nil {
				t.Fatal(err)
			}
			for _, limit := range []int{1, 2, 4, 100} {
				got := walkPages(t, h.e, h.ws, archived, limit)
				if !reflect.DeepEqual(got, list) {
					t.Fatalf("archived=%v limit %d:\npages %+v\nlist  %+v", archived, limit, got, list)
				}
			}
		}
	}
	check()
	h.restart()
	check()
	if _, _, err := h.e.ListPage(h.ws, false, "x", 1); engine.CodeOf(err) != engine.CodeInvalidParams {
		t.Fatalf("bad cursor: %v", err)
	}
}
