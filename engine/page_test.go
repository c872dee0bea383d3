package engine_test

import (
	"testing"

	"github.com/loopdev/loop/engine"
)

func TestPageSummaries(t *testing.T) {
	list := []engine.Summary{{ID: "c", UpdatedAt: 30}, {ID: "b", UpdatedAt: 20}, {ID: "a2", UpdatedAt: 10}, {ID: "a1", UpdatedAt: 10}}
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
	moved := append([]engine.Summary{{ID: "a1", UpdatedAt: 40}}, list[:3]...)
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
