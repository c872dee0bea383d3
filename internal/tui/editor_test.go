package tui

import "testing"

func TestEditorDeletesWholeGraphemeClusters(t *testing.T) {
	var e editor
	e.insert("a👍🏽👩‍👩‍👧e\u0301")
	for _, want := range []string{"a👍🏽👩‍👩‍👧", "a👍🏽", "a", ""} {
		e.backspace()
		if e.text != want {
			t.Fatalf("after backspace %q, want %q", e.text, want)
		}
	}
}

func TestEditorRenderMeasuresWideCharacters(t *testing.T) {
	var e editor
	e.insert("日本語")
	lines, row, col := e.render("> ", 80)
	if len(lines) != 1 || lines[0] != "> 日本語" || row != 0 || col != 8 {
		t.Fatalf("render: %q row %d col %d", lines, row, col)
	}
	// Wrapped at 6 columns: a wide character never straddles the edge.
	lines, row, col = e.render("> ", 6)
	if len(lines) != 2 || lines[0] != "> 日本" || lines[1] != "  語" || row != 1 || col != 4 {
		t.Fatalf("render at 6: %q row %d col %d", lines, row, col)
	}
}

func TestEditorUpAndDownMoveBetweenLinesThenThroughHistory(t *testing.T) {
	var e editor
	e.remember("older")
	e.insert("one\ntwo")
	e.up()
	if e.cur != len("one") {
		t.Fatalf("up from the second line: cursor %d", e.cur)
	}
	e.up()
	if e.text != "older" {
		t.Fatalf("up on the first line: %q", e.text)
	}
	e.down()
	if e.text != "one\ntwo" {
		t.Fatalf("down out of the history: %q", e.text)
	}
}
