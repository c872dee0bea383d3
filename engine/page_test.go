package engine_test

import (
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

func TestPageSummaries(t *testing.T) {
	sum := func(id string, updatedAt int64) engine.Summary {
		return engine.Summary{Summary: store.Summary{ID: id, UpdatedAt: updatedAt}}
	}
	list := []engine.Summary{sum("c", 30), sum("b", 20), sum("a2", 10), sum("a1", 10)}
	var got []string
	cursor := ""
	for range 10 {
		page, next, err := engine.PageSummaries(list, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			got = append(got, s.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(got) != 4 || got[2] != "a2" || got[3] != "a1" {
		t.Fatalf("pages: %v", got)
	}
	// A session that became active after the first page does not shift
	// the rest.
	moved := append([]engine.Summary{sum("a1", 40)}, list[:3]...)
	page, _, _ := engine.PageSummaries(moved, "20/b", 10)
	if len(page) != 1 || page[0].ID != "a2" {
		t.Fatalf("after a move: %+v", page)
	}
	if _, _, err := engine.PageSummaries(list, "x", 1); engine.CodeOf(err) != engine.CodeInvalidParams {
		t.Fatalf("bad cursor: %v", err)
	}
	if page, next, _ := engine.PageSummaries(list, "5/zzz", 2); len(page) != 0 || next != "" {
		t.Fatalf("past the end: %+v %q", page, next)
	}
}
