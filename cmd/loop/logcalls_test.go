package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNoLogCallIsGivenAPrintfFormat checks every Go file of the module the
// way go vet's printf check would if it knew log/slog: slog never formats
// its message, so a printf verb in it, or in an attribute's value, is
// written as it is ("trace %s: ... %v" args=[...]), and so is the format
// of a printf-style function that hands it to slog.
func TestNoLogCallIsGivenAPrintfFormat(t *testing.T) {
	for _, sf := range moduleSources(t, true) {
		for _, p := range printfToLog(sf.f) {
			t.Errorf("%s:%d: %s", sf.rel, sf.fset.Position(p.at).Line, p.why)
		}
	}
}

// TestTheLogCallCheckFindsPrintfFormats: the check above finds what it is
// for.
func TestTheLogCallCheckFindsPrintfFormats(t *testing.T) {
	src := `package p
func a(log *slog.Logger, ctx context.Context) {
	log.Error("trace %s failed: %v", "dir", d)
	log.WarnContext(ctx, "ok", "detail", "got %d")
	e.log.Log(ctx, slog.LevelInfo, "%q")
	w := Options{Logf: func(format string, args ...any) {
		e.log.Error("trace", "msg", strings.TrimPrefix(format, "loop: "), "args", args)
	}}
	log.Info("50% done", "n", fmt.Sprintf("%d", n))
	t.Errorf("%s", x)
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, p := range printfToLog(f) {
		lines = append(lines, fset.Position(p.at).Line)
	}
	if want := []int{3, 4, 5, 7}; !slices.Equal(lines, want) {
		t.Errorf("found on lines %v, want %v", lines, want)
	}
}

type logProblem struct {
	at  token.Pos
	why string
}

// printfVerb is a printf verb; a space flag is left out, so that "50% done"
// is no verb.
var printfVerb = regexp.MustCompile(`%[-+#0]*([0-9]+|\*)?(\.([0-9]+|\*))?[vTtbcdoOqxXUeEfFgGsp]`)

// logMethods are slog's logging functions and methods, with the index of
// the message among their arguments.
var logMethods = map[string]int{
	"Debug": 0, "Info": 0, "Warn": 0, "Error": 0,
	"DebugContext": 1, "InfoContext": 1, "WarnContext": 1, "ErrorContext": 1,
	"Log": 2, "LogAttrs": 2,
}

// printfToLog lists the log calls of f given a printf verb (in the
// message or a string attribute) or a printf-style function's format.
func printfToLog(f *ast.File) []logProblem {
	var out []logProblem
	var formats [][]string // the format parameters of the enclosing functions
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			walkFunc(n.Type, n.Body, &formats, visit)
			return false
		case *ast.FuncLit:
			walkFunc(n.Type, n.Body, &formats, visit)
			return false
		case *ast.CallExpr:
			if p, ok := badLogCall(n, formats); ok {
				out = append(out, p)
			}
		}
		return true
	}
	ast.Inspect(f, visit)
	return out
}

func walkFunc(typ *ast.FuncType, body *ast.BlockStmt, formats *[][]string, visit func(ast.Node) bool) {
	if body == nil {
		return
	}
	*formats = append(*formats, formatParams(typ))
	ast.Inspect(body, visit)
	*formats = (*formats)[:len(*formats)-1]
}

// formatParams names the string parameter before a final ...any, the
// format of a printf-style function.
func formatParams(typ *ast.FuncType) []string {
	ps := typ.Params.List
	if len(ps) < 2 {
		return nil
	}
	last, ok := ps[len(ps)-1].Type.(*ast.Ellipsis)
	if !ok || !isAny(last.Elt) {
		return nil
	}
	prev := ps[len(ps)-2]
	if id, ok := prev.Type.(*ast.Ident); !ok || id.Name != "string" || len(prev.Names) == 0 {
		return nil
	}
	return []string{prev.Names[len(prev.Names)-1].Name}
}

func isAny(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "any"
	case *ast.InterfaceType:
		return len(e.Methods.List) == 0
	}
	return false
}

// badLogCall reports a call of a slog logging function or method (a
// receiver named slog, or one whose name holds "log") given a verb or a
// format.
func badLogCall(call *ast.CallExpr, formats [][]string) (logProblem, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return logProblem{}, false
	}
	msgAt, ok := logMethods[sel.Sel.Name]
	if !ok || !loggerLike(sel.X) || len(call.Args) <= msgAt {
		return logProblem{}, false
	}
	for i, arg := range call.Args[msgAt:] {
		if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, err := strconv.Unquote(lit.Value)
			if err == nil && printfVerb.MatchString(s) {
				what := "an attribute"
				if i == 0 {
					what = "the message"
				}
				return logProblem{lit.Pos(), sel.Sel.Name + ": " + what + " holds a printf verb, which slog never formats: " + lit.Value}, true
			}
			continue
		}
		var found *ast.Ident
		ast.Inspect(arg, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok && isSprintf(c) {
				return false // formatted before it reaches slog
			}
			if id, ok := n.(*ast.Ident); ok && found == nil && isFormat(id.Name, formats) {
				found = id
			}
			return found == nil
		})
		if found != nil {
			return logProblem{found.Pos(), sel.Sel.Name + ": the format " + found.Name + " of a printf-style function is handed to slog, which never formats it"}, true
		}
	}
	return logProblem{}, false
}

func loggerLike(x ast.Expr) bool {
	name := ""
	switch x := x.(type) {
	case *ast.Ident:
		name = x.Name
	case *ast.SelectorExpr:
		name = x.Sel.Name
	case *ast.CallExpr: // e.g. slog.Default().Info
		if s, ok := x.Fun.(*ast.SelectorExpr); ok {
			name = s.Sel.Name
		}
	}
	n := strings.ToLower(name)
	return n == "slog" || strings.Contains(n, "log") || n == "default"
}

func isSprintf(c *ast.CallExpr) bool {
	s, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := s.X.(*ast.Ident)
	return ok && pkg.Name == "fmt" && strings.HasSuffix(s.Sel.Name, "f") // Sprintf, Errorf, Appendf
}

func isFormat(name string, formats [][]string) bool {
	for _, fs := range formats {
		for _, f := range fs {
			if f == name {
				return true
			}
		}
	}
	return false
}
