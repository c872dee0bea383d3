package main

import (
	"go/ast"
	"strconv"
	"strings"
	"testing"
)

// TestTheStoreAndItsIndexesReachTheDiskThroughOneSeam: the store, the
// search index and the summary index open, write, rename, remove and lock
// files, and checksum what they write, only through store/internal/fsys,
// so that the store's fault tests reach every step of each and the
// <name>.tmp-<digits> names the sweep knows are made in one place. Each
// of the three once carried its own copy of the seam, of its temporary
// files and of the CRC-32C.
func TestTheStoreAndItsIndexesReachTheDiskThroughOneSeam(t *testing.T) {
	const seam = "store/internal/fsys/"
	banned := map[string]map[string]bool{
		"os": {"OpenFile": true, "Open": true, "Create": true, "CreateTemp": true, "Rename": true,
			"Mkdir": true, "MkdirAll": true, "MkdirTemp": true, "Remove": true, "RemoveAll": true,
			"ReadFile": true, "WriteFile": true, "ReadDir": true, "Truncate": true, "Chmod": true},
		"syscall": {"Open": true, "Pread": true, "Fsync": true, "Flock": true},
		"crc32":   {"MakeTable": true},
	}
	seen := false
	for _, sf := range moduleSources(t, false) {
		if !strings.HasPrefix(sf.rel, "store/") {
			continue
		}
		if strings.HasPrefix(sf.rel, seam) {
			seen = true
			continue
		}
		if strings.HasPrefix(sf.rel, "store/internal/storetest/") {
			continue // only tests import it: their fixtures' own directories
		}
		for _, imp := range sf.f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/loopdev/loop/internal/flock" {
				t.Errorf("%s imports %s: locks go through %s", sf.rel, p, seam)
			}
		}
		ast.Inspect(sf.f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && banned[pkg.Name][sel.Sel.Name] {
				t.Errorf("%s: %s.%s bypasses the file-system seam (%s)", sf.fset.Position(sel.Pos()), pkg.Name, sel.Sel.Name, seam)
			}
			return true
		})
	}
	if !seen {
		t.Fatalf("no file of %s found", seam)
	}
}
