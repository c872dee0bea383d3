package rpc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/rpc/internal/native"
)

// TestOnlyNativeDeclaresWhatLoopWritesAndReads keeps ARCHITECTURE.md's
// claim true: every struct that carries the native protocol's member names
// is declared in rpc/internal/native, where the golden files, the
// field-name check against docs/protocol.md and the method table
// (native.Methods) see it: what Loop writes (a result, a notification's
// params, a request of the server's own) and what it reads (a method's
// params, a client's answer). Package rpc declares no struct with JSON
// tags at all, named, anonymous or in a literal.
func TestOnlyNativeDeclaresWhatLoopWritesAndReads(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			if st, ok := n.(*ast.StructType); ok && hasJSONTags(st) {
				t.Errorf("%s: a struct with JSON tags: the protocol's structs belong in rpc/internal/native", fset.Position(n.Pos()))
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source file of package rpc was read")
	}
}

// TestTheServedMethodsAreTheNativeTable: the server serves every method
// of native.Methods and no other, each with a handler of the params and
// result types the table names (methods.go refuses to build a table
// otherwise), so a schema generated from the table is the protocol served.
func TestTheServedMethodsAreTheNativeTable(t *testing.T) {
	served := (&Server{}).methods()
	var want []string
	for _, m := range native.Methods() {
		want = append(want, m.Name)
		if _, ok := served[m.Name]; !ok {
			t.Errorf("%s is in native.Methods but not served", m.Name)
		}
	}
	if len(served) != len(want) {
		t.Errorf("the server serves %d methods, native.Methods lists %d: %v", len(served), len(want), want)
	}
}

func hasJSONTags(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		if f.Tag != nil && strings.Contains(f.Tag.Value, `json:"`) {
			return true
		}
	}
	return false
}
