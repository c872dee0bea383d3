package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

const (
	grepDefaultLimit = 100
	grepMaxLimit     = 2000
	grepMaxFileSize  = 4 << 20
	grepMaxLineBytes = 64 << 10 // a longer line is matched on its first 64 KiB
	grepShownLine    = 300      // characters of a matching line shown
	grepMaxBytes     = 64 << 10
)

var grepFields = []field{
	{name: "pattern", typ: "string", required: true, desc: "Regular expression in Go (RE2) syntax, matched against each line."},
	{name: "path", typ: "string", desc: "File or directory to search, relative to the working directory (default: the working directory)."},
	{name: "glob", typ: "string", desc: `Only search files matching this glob, e.g. "*.go" (file names at any depth) or "src/**/*.ts" (paths relative to path).`},
	{name: "ignoreCase", typ: "boolean", desc: "Match case-insensitively."},
	{name: "limit", typ: "integer", desc: fmt.Sprintf("Maximum number of matching lines (default %d, at most %d).", grepDefaultLimit, grepMaxLimit)},
}

type grepTool struct{}

func (grepTool) Name() string { return NameGrep }

func (grepTool) Description() string {
	return fmt.Sprintf("Search file contents with a regular expression (Go RE2 syntax, no backreferences or lookaround). "+
		"Each matching line comes back as \"file:line: text\", file relative to the working directory, in path order; "+
		"lines longer than %d characters are cut. .git, node_modules, binary files, files over %d MiB and symbolic links are skipped. "+
		".gitignore is not consulted.", grepShownLine, grepMaxFileSize>>20)
}

func (grepTool) Schema() json.RawMessage { return schemaOf(grepFields) }

func (grepTool) access() access { return accessRead }

func (grepTool) parse(raw json.RawMessage) (args, error) { return parseArgs(NameGrep, grepFields, raw) }

func (grepTool) paths(a args) []string { return []string{dirArg(a)} }

type grepRun struct {
	re      *regexp.Regexp
	limit   int
	out     strings.Builder
	matches int
	files   int
	full    bool // limit or byte cap reached
	skipped int  // files over the size cap
}

func (t grepTool) Run(ctx context.Context, env Env, raw json.RawMessage, progress func(string)) Result {
	a, err := t.parse(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	pattern, _ := a.str("pattern")
	if pattern == "" {
		return errorResult("invalid arguments for grep: pattern is empty")
	}
	limit, err := limitArg(a, NameGrep, grepDefaultLimit, grepMaxLimit)
	if err != nil {
		return errorResult("%v", err)
	}
	expr := pattern
	if a.boolean("ignoreCase") {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return errorResult("grep: invalid pattern: %v", err)
	}
	var glob *globMatcher
	if g, ok := a.str("glob"); ok && g != "" {
		if glob, err = compileGlob(g); err != nil {
			return errorResult("grep: invalid glob: %v", err)
		}
	}
	arg := dirArg(a)
	abs, display, err := env.target(arg)
	if err != nil {
		return errorResult("grep %s: %v", arg, err)
	}
	cwdRoot, err := workspaceRoot(env.Cwd)
	if err != nil {
		return errorResult("grep: %v", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return errorResult("grep %s: %v", display, plainErr(err))
	}
	g := &grepRun{re: re, limit: limit}
	if !fi.IsDir() && !fi.Mode().IsRegular() {
		return errorResult("grep %s: it is %s, not a regular file", display, fileKind(fi.Mode()))
	}
	if !fi.IsDir() {
		// An explicitly named file is searched whatever its size; binary is still refused.
		binary, err := g.searchFile(ctx, abs, display)
		if err != nil {
			return errorResult("grep %s: %v", display, plainErr(err))
		}
		if binary {
			return errorResult("grep %s: it is a binary file", display)
		}
	} else {
		root, err := walkRoot(abs)
		if err != nil {
			return errorResult("grep %s: %v", display, err)
		}
		err = walkTree(ctx, root, func(rel string, d fs.DirEntry) error {
			if !d.Type().IsRegular() || (glob != nil && !glob.match(rel)) {
				return nil
			}
			if info, err := d.Info(); err != nil || info.Size() > grepMaxFileSize {
				g.skipped++
				return nil
			}
			shown := displayPath(cwdRoot, filepath.Join(abs, filepath.FromSlash(rel)))
			if _, err := g.searchFile(ctx, filepath.Join(root, filepath.FromSlash(rel)), shown); err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			if g.full {
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			return errorResult("grep %s: %v", display, plainErr(err))
		}
	}
	details := map[string]any{"path": abs, "matches": g.matches, "files": g.files, "truncated": g.full}
	text := g.out.String()
	if g.matches == 0 {
		text = fmt.Sprintf("No matches for %q under %s.\n", pattern, display)
	}
	if g.full {
		text += fmt.Sprintf("[Stopped after %d matches; narrow the pattern, path or glob, or raise limit.]\n", g.matches)
	}
	if g.skipped > 0 {
		text += fmt.Sprintf("[%d file(s) over %d MiB were skipped; grep one by its path to search it.]\n", g.skipped, grepMaxFileSize>>20)
	}
	return textResult(text, details)
}

// searchFile appends the matching lines of one file. It reports binary files
// (skipped) and stops once the run is full.
func (g *grepRun) searchFile(ctx context.Context, path, shown string) (binary bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head, err := readHead(f, sniffLen)
	if err != nil {
		return false, err
	}
	if isBinary(head) {
		return true, nil
	}
	return false, g.searchLines(ctx, f, shown)
}

// searchLines appends the matching lines of r, named shown. It stops once
// the run is full, and with ctx's error once ctx is done.
func (g *grepRun) searchLines(ctx context.Context, r io.Reader, shown string) error {
	lr := newLineReader(ctx, r)
	hit := false
	for lineNo := 1; ; lineNo++ {
		line, full, err := lr.next(grepMaxLineBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if errors.Is(err, io.EOF) && full == 0 {
			break
		}
		line = strings.TrimSuffix(line, "\r")
		if g.re.MatchString(line) {
			if g.matches == g.limit || g.out.Len() > grepMaxBytes {
				g.full = true
				break
			}
			g.matches++
			hit = true
			fmt.Fprintf(&g.out, "%s:%d: %s\n", shown, lineNo, clipLine(line, grepShownLine))
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if hit {
		g.files++
	}
	return nil
}

// clipLine cuts s to n characters, on a rune boundary, with a marker.
func clipLine(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	r := []rune(s)
	return strings.ToValidUTF8(string(r[:n]), "\uFFFD") + " ..."
}
