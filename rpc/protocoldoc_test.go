package rpc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/loopdev/loop/rpc/internal/schema"
)

// docTable is the first table of a docs/protocol.md section whose header
// starts with "| param |" or "| field |": each row's names (the first
// cell's backquoted names, up to a dot) and its third cell.
func docTable(section string) (rows map[string]string, found bool) {
	rows = map[string]string{}
	name := regexp.MustCompile("`([A-Za-z$]+)[.`]")
	in := false
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "| param |"), strings.HasPrefix(line, "| field |"):
			if found {
				return rows, true
			}
			in, found = true, true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "| "):
			cells := strings.Split(line, " | ")
			third := ""
			if len(cells) > 2 {
				third = strings.TrimSpace(cells[2])
			}
			for _, m := range name.FindAllStringSubmatch(cells[0], -1) {
				rows[m[1]] = third
			}
		case in:
			return rows, true
		}
	}
	return rows, found
}

// docSection is the text under the heading "### `name`" up to the next
// heading of that level or above.
func docSection(t *testing.T, doc, name string) string {
	t.Helper()
	head := "\n### `" + name + "`\n"
	i := strings.Index(doc, head)
	if i < 0 {
		return ""
	}
	rest := doc[i+len(head):]
	if j := regexp.MustCompile(`\n##+ `).FindStringIndex(rest); j != nil {
		rest = rest[:j[0]]
	}
	return rest
}

// TestProtocolDocTablesMatchTheSchema holds docs/protocol.md to the types
// `loop protocol schema` is generated from (protocolSpec): each method's
// param table in section 5 names exactly the members of its params, a
// param the table calls "required" or "optional" is that in the schema;
// each notification's field table in section 7 and the approval request's
// in section 6 name exactly the members of their params; and every member
// of every definition is one the document names. So the reference, the
// schema and the server's types cannot drift apart.
func TestProtocolDocTablesMatchTheSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	spec := protocolSpec()
	d, err := schema.Read(spec)
	if err != nil {
		t.Fatal(err)
	}
	compare := func(what, def string, rows map[string]string, withRequired bool) {
		t.Helper()
		fields := d.Fields(def)
		var inSchema []string
		for _, f := range fields {
			inSchema = append(inSchema, f.Name)
			doc, ok := rows[f.Name]
			switch {
			case !ok:
				t.Errorf("%s: the schema's %s has %q, which its table in docs/protocol.md does not list", what, def, f.Name)
			case withRequired && doc == "required" && f.Optional:
				t.Errorf("%s: docs/protocol.md says %q is required; the schema's %s has it optional (omitempty)", what, f.Name, def)
			case withRequired && doc == "optional" && !f.Optional:
				t.Errorf("%s: docs/protocol.md says %q is optional; the schema's %s requires it (tag it omitempty)", what, f.Name, def)
			}
		}
		var documented []string
		for name := range rows {
			documented = append(documented, name)
		}
		sort.Strings(documented)
		for _, name := range documented {
			if !slices.Contains(inSchema, name) {
				t.Errorf("%s: docs/protocol.md lists %q, which the schema's %s does not have", what, name, def)
			}
		}
	}
	for _, m := range spec.Methods {
		section := docSection(t, doc, m.Name)
		if section == "" {
			t.Errorf("docs/protocol.md has no section for the method %s", m.Name)
			continue
		}
		rows, found := docTable(section)
		if !found && len(d.Fields(schema.ParamsDef(m.Name))) > 0 {
			t.Errorf("%s: docs/protocol.md has no param table for its params", m.Name)
			continue
		}
		compare(m.Name, schema.ParamsDef(m.Name), rows, true)
	}
	for _, n := range spec.Notifications {
		section := docSection(t, doc, n.Name)
		if section == "" {
			continue // $/cancelRequest is told in section 6
		}
		rows, _ := docTable(section)
		compare(n.Name, schema.ParamsDef(n.Name), rows, false)
	}
	for _, r := range spec.ServerRequests {
		i := strings.Index(doc, "\n## 6. Server requests: `"+r.Name+"`")
		if i < 0 {
			t.Errorf("docs/protocol.md has no section 6 for %s", r.Name)
			continue
		}
		rows, _ := docTable(doc[i:])
		compare(r.Name, schema.ParamsDef(r.Name), rows, false)
	}
	for _, name := range d.Names() {
		for _, f := range d.Fields(name) {
			if !strings.Contains(doc, "`"+f.Name+"`") && !strings.Contains(doc, `"`+f.Name+`":`) {
				t.Errorf("the schema's %s has the member %q, which docs/protocol.md does not name", name, f.Name)
			}
		}
	}
}

// TestProtocolSchemaCostsNothingAtStartUp: the schema's generator and its
// table are linked into the server but run only for `loop protocol`: they
// declare no init function and no package-level variable, whose
// initializers would run (and reflect, compile, allocate) at every start.
func TestProtocolSchemaCostsNothingAtStartUp(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("internal", "schema", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "protocolspec.go", "protocolschema.go")
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
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == "init" {
					t.Errorf("%s: an init function runs at every start", fset.Position(d.Pos()))
				}
			case *ast.GenDecl:
				if d.Tok == token.VAR {
					t.Errorf("%s: a package-level variable is initialized at every start", fset.Position(d.Pos()))
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("read only %d files", checked)
	}
}
