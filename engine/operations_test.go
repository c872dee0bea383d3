package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestOperationsListsEveryOpConstant reads the package's source for its
// Op constants: a new operation left out of Operations would be missing
// from the protocol schema's enum, and a session/state naming it would
// fail the schema check (as fork, rewind and edit once did).
func TestOperationsListsEveryOpConstant(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Op") || len(n.Name) < 3 || n.Name[2] < 'A' || n.Name[2] > 'Z' || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					consts = append(consts, v)
				}
			}
		}
	}
	if len(consts) == 0 {
		t.Fatal("found no Op constants in the package's source")
	}
	have := Operations()
	slices.Sort(consts)
	slices.Sort(have)
	if !slices.Equal(consts, have) {
		t.Fatalf("Operations() = %v, the Op constants are %v", have, consts)
	}
}
