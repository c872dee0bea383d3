package rpc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyNativeDeclaresWhatLoopWrites keeps ARCHITECTURE.md's claim true:
// every struct Loop writes on the native wire (a result, a notification's
// params, a request of the server's own) is declared in rpc/internal/native,
// where the golden files and the field-name check against docs/protocol.md
// see it. In package rpc, a struct with JSON tags may only be something a
// handler decodes: a named type called *Param or *Params, or an anonymous
// struct declared as a variable to decode into. The one exception is the
// envelope rpc.Notification, whose params are native's.
func TestOnlyNativeDeclaresWhatLoopWrites(t *testing.T) {
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
			switch n := n.(type) {
			case *ast.TypeSpec:
				st, ok := n.Type.(*ast.StructType)
				if !ok || !hasJSONTags(st) {
					return true
				}
				lower := strings.ToLower(n.Name.Name)
				if n.Name.Name != "Notification" && !strings.HasSuffix(lower, "param") && !strings.HasSuffix(lower, "params") {
					t.Errorf("%s: type %s has JSON tags: what Loop writes belongs in rpc/internal/native, and what a handler decodes is named ...Params",
						fset.Position(n.Pos()), n.Name.Name)
				}
			case *ast.CompositeLit:
				if st, ok := n.Type.(*ast.StructType); ok && hasJSONTags(st) {
					t.Errorf("%s: a struct literal with JSON tags: what Loop writes belongs in rpc/internal/native", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source file of package rpc was read")
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
