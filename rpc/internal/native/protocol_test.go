package native

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// member is one JSON member a wire type writes or a params struct reads,
// and the file that declares it.
type member struct {
	typ, field, name, file string
}

// wireMembers returns every JSON member name declared by the structs of
// the package in dir (its non-test files), nested anonymous structs
// included. It reads the source rather than a list of types, so a new type
// is checked without being registered anywhere. Every exported
// field of a struct that declares JSON members must have a member name
// (`json:"-"` says it has none on purpose), so a forgotten tag cannot write
// a Go field name; embedded fields lend their members, and unexported ones
// are never written. Structs without any JSON tag (the method table's
// specs) are not wire types.
func wireMembers(t *testing.T, dir string) []member {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []member
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		// owner names the declaration a struct belongs to, for messages.
		var owner string
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				owner = n.Name.Name
			case *ast.TypeSpec:
				owner = n.Name.Name
			case *ast.StructType:
				tagged := false
				for _, fld := range n.Fields.List {
					tagged = tagged || fld.Tag != nil && strings.Contains(fld.Tag.Value, `json:"`)
				}
				if !tagged {
					return true
				}
				for _, fld := range n.Fields.List {
					if len(fld.Names) == 0 || !fld.Names[0].IsExported() {
						continue // embedded, or never written
					}
					var tag string
					if fld.Tag != nil {
						var err error
						if tag, err = strconv.Unquote(fld.Tag.Value); err != nil {
							t.Fatal(err)
						}
					}
					jname, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
					if jname == "-" {
						continue
					}
					if jname == "" {
						t.Errorf("%s: a field of %s has no json member name", fset.Position(fld.Pos()), owner)
						continue
					}
					for _, id := range fld.Names {
						out = append(out, member{owner, id.Name, jname, filepath.Base(name)})
					}
				}
			}
			return true
		})
	}
	return out
}

// TestWireMembersAreDocumented: every member name a wire type writes, and
// every params member the server decodes (params.go), is one docs/protocol.md names,
// in backquotes (`name`, as its tables do) or as a JSON key ("name": in its
// examples). Renaming a Go field cannot change the protocol (the tag is
// the name), and renaming a tag, or adding a member, fails here until the
// reference says so.
func TestWireMembersAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	members := wireMembers(t, ".")
	if len(members) < 100 {
		t.Fatalf("found only %d members: the source scan is broken", len(members))
	}
	params := 0
	for _, m := range members {
		if m.file == "params.go" {
			params++
		}
	}
	if params < 20 {
		t.Fatalf("found only %d params members in params.go: the source scan is broken", params)
	}
	for _, m := range members {
		if !strings.Contains(text, "`"+m.name+"`") && !strings.Contains(text, `"`+m.name+`":`) {
			t.Errorf("%s.%s is the member %q, which docs/protocol.md does not name", m.typ, m.field, m.name)
		}
	}
}

// TestDocumentedDataTypeFieldsExist is the other direction for the tables
// of docs/protocol.md section 4 (data types): every field a table lists is
// a member some wire type writes, so the reference cannot promise a member
// the server never sends.
func TestDocumentedDataTypeFieldsExist(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "\n## 4. Data types")
	end := strings.Index(text, "\n## 5. Methods")
	if start < 0 || end < start {
		t.Fatal("docs/protocol.md has no section 4 before section 5")
	}
	names := map[string]bool{}
	for _, m := range wireMembers(t, ".") {
		if m.file != "params.go" { // what the server reads is not a data type it writes
			names[m.name] = true
		}
	}
	// A table row's first cell: one or more backquoted names.
	row := regexp.MustCompile("(?m)^\\| (`[^|]+`) \\|")
	cell := regexp.MustCompile("`([A-Za-z]+)`")
	var documented []string
	for _, r := range row.FindAllStringSubmatch(text[start:end], -1) {
		for _, c := range cell.FindAllStringSubmatch(r[1], -1) {
			documented = append(documented, c[1])
		}
	}
	if len(documented) < 50 {
		t.Fatalf("found only %d documented fields: the table scan is broken", len(documented))
	}
	sort.Strings(documented)
	for _, d := range documented {
		if !names[d] {
			t.Errorf("docs/protocol.md section 4 lists `%s`, which no wire type writes", d)
		}
	}
}
