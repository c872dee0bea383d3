package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A source file of the module, parsed, for the checks below that keep one
// kind of knowledge in one place.
type sourceFile struct {
	rel  string // slash-separated, from the module root
	fset *token.FileSet
	f    *ast.File
}

// moduleSources parses every Go file of the module, its tests too when
// withTests is set.
func moduleSources(t *testing.T, withTests bool) []sourceFile {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var out []sourceFile
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "node_modules", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || !withTests && strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out = append(out, sourceFile{rel: filepath.ToSlash(rel), fset: fset, f: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no Go file found")
	}
	return out
}

// stringLits calls fn for every string literal of f that is a value (not
// an import path or a struct tag), with the chain of nodes above it.
func stringLits(f *ast.File, fn func(lit *ast.BasicLit, value string, stack []ast.Node)) {
	skip := map[*ast.BasicLit]bool{}
	for _, imp := range f.Imports {
		skip[imp.Path] = true
	}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if fld, ok := n.(*ast.Field); ok && fld.Tag != nil {
			skip[fld.Tag] = true
		}
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && !skip[lit] {
			if v, err := strconv.Unquote(lit.Value); err == nil {
				fn(lit, v, stack)
			}
		}
		stack = append(stack, n)
		return true
	})
}

// dataRootFiles and dataRootDirs are the names docs/storage.md and
// docs/configuration.md give the paths under a data root; store/layout.go
// is the one file that spells them.
var (
	dataRootFiles = []string{"config.json", "preferences.json", "workspaces.json",
		"header.json", "messages.jsonl", "index.bin", "runtime.jsonl", "timings.jsonl"}
	dataRootDirs = []string{"sessions", "traces", "skills"}
)

// nameChars are the characters a file name goes on with.
const nameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"

// dataRootLiteral says why a string literal spells a path under the data
// root by hand, or "".
func dataRootLiteral(v string, stack []ast.Node) string {
	if slices.Contains(dataRootFiles, v) {
		return "names a data root file"
	}
	if strings.Contains(v, "loop-recovery-") || v == "-workspaces" {
		return "names a data root path"
	}
	for _, name := range append(slices.Clone(dataRootFiles), dataRootDirs...) {
		// After a path or a verb, as in "%s/config.json" (a slash
		// command such as "/sessions" has none), and as the whole name.
		if i := strings.Index(v, "/"+name); i > 0 && strings.ContainsAny(v[i-1:i], nameChars) {
			if rest := v[i+1+len(name):]; rest == "" || !strings.ContainsAny(rest[:1], nameChars) {
				return "spells a path under the data root"
			}
		}
	}
	if bare := strings.TrimPrefix(v, "/"); !slices.Contains(dataRootDirs, bare) && bare != "global" && bare != ".loop" {
		return ""
	}
	// The folder names are ordinary words (a wire member "sessions", a
	// skill's source "global"): only as a piece of a path are they the
	// layout's.
	switch p := stack[len(stack)-1].(type) {
	case *ast.CallExpr:
		if sel, ok := p.Fun.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "filepath" || x.Name == "path" || x.Name == "os") {
				return "is joined into a path"
			}
		}
	case *ast.BinaryExpr:
		if p.Op == token.ADD {
			return "is concatenated into a path"
		}
	case *ast.ValueSpec:
		if g, ok := stack[len(stack)-2].(*ast.GenDecl); ok && g.Tok == token.CONST {
			return "names a data root folder"
		}
	}
	return ""
}

// TestDataRootPathsAreNamedOnlyByTheLayout: store.Layout (store/layout.go)
// names every path under the data root, and everything else asks it. The
// engine once joined the store's own "sessions" folder, and the data root's
// names were spelled in store, engine and cmd/loop.
func TestDataRootPathsAreNamedOnlyByTheLayout(t *testing.T) {
	for _, sf := range moduleSources(t, false) {
		if sf.rel == "store/layout.go" {
			continue
		}
		stringLits(sf.f, func(lit *ast.BasicLit, v string, stack []ast.Node) {
			if why := dataRootLiteral(v, stack); why != "" {
				t.Errorf("%s:%d: %s %s: ask store.Layout (store/layout.go)", sf.rel, sf.fset.Position(lit.Pos()).Line, lit.Value, why)
			}
		})
	}
}

// TestTheLayoutCheckFindsHandMadePaths: the check above finds what it is
// for, and leaves the same words alone where they are not paths.
func TestTheLayoutCheckFindsHandMadePaths(t *testing.T) {
	src := `package p
const dir = "traces"
func a() {
	_ = filepath.Join(root, "sessions", id)
	_ = os.ReadDir(root + "/skills")
	_ = loadPreferences("preferences.json")
	_ = fmt.Sprintf("loop-recovery-%s.json", id)
	_ = fmt.Sprintf("add one to %s/config.json, or", root)
	_ = r.dir + "-workspaces"
	_ = filepath.Join(cwd, ".loop", "skills")
}
type T struct {
	Sessions []string ` + "`json:\"sessions\"`" + `
}
func b() {
	_ = Skill{Source: "global"}
	notify("sessions/changed")
	d.put("skills")
	if cmd == "/sessions" || doc == "docs/sessions.md" || help == "  /sessions  list" {
	}
}`
	want := []int{2, 4, 5, 6, 7, 8, 9, 10, 10}
	if got := layoutFindings(t, src); !slices.Equal(got, want) {
		t.Errorf("findings on lines %v, want %v", got, want)
	}
}

func layoutFindings(t *testing.T, src string) []int {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	stringLits(f, func(lit *ast.BasicLit, v string, stack []ast.Node) {
		if dataRootLiteral(v, stack) != "" {
			lines = append(lines, fset.Position(lit.Pos()).Line)
		}
	})
	return lines
}

// apiNames are the provider APIs config.json's "api" names, and the demo.
var apiNames = []string{"openai", "openai-responses", "anthropic", "scripted", "demo"}

// apiComparison says whether e is an API name: a literal of apiNames or
// one of the provider package's API constants.
func apiComparison(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		v, err := strconv.Unquote(e.Value)
		return err == nil && slices.Contains(apiNames, v)
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && x.Name == "provider" && strings.HasPrefix(e.Sel.Name, "API")
	case *ast.Ident:
		return slices.Contains([]string{"APIOpenAI", "APIOpenAIResponses", "APIAnthropic", "APIScripted", "APIDemo"}, e.Name)
	}
	return false
}

// apiSwitches returns the lines of f that compare a value with a provider
// API's name: a switch case or an == or != comparison.
func apiSwitches(fset *token.FileSet, f *ast.File) []int {
	var lines []int
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			if slices.ContainsFunc(n.List, apiComparison) {
				lines = append(lines, fset.Position(n.Pos()).Line)
			}
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (apiComparison(n.X) || apiComparison(n.Y)) {
				lines = append(lines, fset.Position(n.Pos()).Line)
			}
		}
		return true
	})
	return lines
}

// TestProviderAPIsAreLookedUpInTheRegistry: what Loop does per provider API
// (check a providers entry, make its client, trace and replay its calls,
// start background titles) is registered once, in
// internal/provider/registry.go; everywhere else asks the registry. The
// api name was once switched on in seven places, and a new API had to find
// them all.
func TestProviderAPIsAreLookedUpInTheRegistry(t *testing.T) {
	// The fake server of providertest serves each API's own paths: it is
	// the API's wire format, not a decision about the API.
	allowed := map[string]bool{"internal/provider/registry.go": true, "internal/provider/providertest/server.go": true}
	for _, sf := range moduleSources(t, false) {
		if allowed[sf.rel] {
			continue
		}
		for _, line := range apiSwitches(sf.fset, sf.f) {
			t.Errorf("%s:%d: decides by a provider API's name: register it in internal/provider/registry.go and look it up", sf.rel, line)
		}
	}
}

// TestTheRegistryCheckFindsSwitchesOnTheAPI: the check above finds what it
// is for.
func TestTheRegistryCheckFindsSwitchesOnTheAPI(t *testing.T) {
	src := `package p
func a() {
	switch pc.API {
	case "openai", "anthropic":
	case provider.APIScripted:
	}
	_ = p.api == provider.APIOpenAI || p.api == provider.APIAnthropic
	_ = p.API != "scripted"
	_ = name == "openai-compatible"
	c.providers["demo"] = nil
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := apiSwitches(fset, f), []int{4, 5, 7, 7, 8}; !slices.Equal(got, want) {
		t.Errorf("findings on lines %v, want %v", got, want)
	}
}

// efforts is the effort list of docs/protocol.md.
var efforts = []string{"default", "off", "minimal", "low", "medium", "high", "xhigh", "max"}

// TestEffortsAreListedOnce: the list of effort values is written once
// (internal/provider/provider.go); the engine's list, a flag's help and an
// error message are made from it. It was once written out in the engine
// as well as in the provider package.
func TestEffortsAreListedOnce(t *testing.T) {
	spelled := strings.Join(efforts[:len(efforts)-1], ", ")
	var where []string
	for _, sf := range moduleSources(t, false) {
		ast.Inspect(sf.f, func(n ast.Node) bool {
			pos := token.NoPos
			switch n := n.(type) {
			case *ast.CompositeLit:
				// The list as a slice literal of all eight names,
				// constants or strings.
				var names []string
				for _, el := range n.Elts {
					switch el := el.(type) {
					case *ast.BasicLit:
						v, _ := strconv.Unquote(el.Value)
						names = append(names, strings.ToLower(v))
					case *ast.Ident:
						names = append(names, strings.ToLower(strings.TrimPrefix(el.Name, "Effort")))
					case *ast.SelectorExpr:
						names = append(names, strings.ToLower(strings.TrimPrefix(el.Sel.Name, "Effort")))
					}
				}
				if len(names) == len(efforts) && !slices.ContainsFunc(efforts, func(e string) bool { return !slices.Contains(names, e) }) {
					pos = n.Pos()
				}
			case *ast.BasicLit:
				// The list spelled out in a text.
				if v, err := strconv.Unquote(n.Value); err == nil && strings.Contains(v, spelled) {
					pos = n.Pos()
				}
			}
			if pos.IsValid() {
				where = append(where, sf.rel+":"+strconv.Itoa(sf.fset.Position(pos).Line))
			}
			return true
		})
	}
	if len(where) != 1 || !strings.HasPrefix(where[0], "internal/provider/provider.go:") {
		t.Errorf("the effort list is written at %v; want it once, in internal/provider/provider.go", where)
	}
}

// TestCommandsBuildTheirEngineInOnePlace: every command of cmd/loop makes
// its engine through newEngine (cmd/loop/engine.go), so what every engine
// of the binary shares is set in one place. Six commands once called
// engine.New each with options of their own.
func TestCommandsBuildTheirEngineInOnePlace(t *testing.T) {
	var where []string
	for _, sf := range moduleSources(t, false) {
		if !strings.HasPrefix(sf.rel, "cmd/loop/") {
			continue
		}
		ast.Inspect(sf.f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "engine" && sel.Sel.Name == "New" {
						where = append(where, sf.rel+":"+strconv.Itoa(sf.fset.Position(call.Pos()).Line))
					}
				}
			}
			return true
		})
	}
	if len(where) != 1 || !strings.HasPrefix(where[0], "cmd/loop/engine.go:") {
		t.Errorf("cmd/loop calls engine.New at %v; want once, in cmd/loop/engine.go (newEngine)", where)
	}
}
