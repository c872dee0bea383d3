package wire

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// methodName matches the method names of both dialects (docs/protocol.md,
// docs/acp.md): the transport must not know any of them. What it does
// with a message by method (merging streaming pieces, say) the dialect
// configures (Options.Merger, MergeText).
var methodName = regexp.MustCompile(`^(\$/\w+|(session|sessions|workspace|model|config|skill|fs|terminal)/\w+|initialize|initialized|shutdown|exit|authenticate)$`)

func TestTransportKnowsNoMethodNames(t *testing.T) {
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
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			if methodName.MatchString(s) || strings.Contains(s, "session/") {
				t.Errorf("%s: the transport names the method %q", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no sources checked")
	}
}
