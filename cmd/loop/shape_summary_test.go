package main

import (
	"go/ast"
	"path"
	"strconv"
	"strings"
	"testing"
)

// TestTheSummaryIndexLivesInItsOwnPackage: the summary index
// (docs/storage.md, "Summary index") is derived data beside the commit
// path, in store/internal/summary, which the store wires in as an
// observer and which imports nothing of the module but the file-system
// seam it shares with the store (store/internal/fsys); package store never
// spells the index's file or format. The index's format, reading, writers
// and rebuild once lived in package store itself.
func TestTheSummaryIndexLivesInItsOwnPackage(t *testing.T) {
	const pkg = "store/internal/summary"
	seen := false
	for _, sf := range moduleSources(t, false) {
		switch path.Dir(sf.rel) {
		case "store":
			stringLits(sf.f, func(_ *ast.BasicLit, v string, _ []ast.Node) {
				if strings.Contains(v, ".summaries") || strings.Contains(v, "loop-summaries") {
					t.Errorf("%s spells the summary index's file or format (%q): it is %s's", sf.rel, v, pkg)
				}
			})
		case pkg:
			seen = true
			for _, imp := range sf.f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(p, "github.com/loopdev/loop") && p != "github.com/loopdev/loop/store/internal/fsys" {
					t.Errorf("%s imports %s: the summary index works on its own records and file-system seam", sf.rel, p)
				}
			}
		}
	}
	if !seen {
		t.Fatalf("no file of %s found", pkg)
	}
}
