package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	findDefaultLimit = 500
	findMaxLimit     = 5000
	findMaxBytes     = 64 << 10
)

var findFields = []field{
	{name: "pattern", typ: "string", required: true, desc: `Glob to match, e.g. "*.go", "src/**/*.test.ts", "**/{Makefile,*.mk}". Without "/" it matches file names at any depth; with "/" it matches the path relative to the search directory.`},
	{name: "path", typ: "string", desc: "Directory to search, relative to the working directory (default: the working directory)."},
	{name: "limit", typ: "integer", desc: fmt.Sprintf("Maximum number of results (default %d, at most %d).", findDefaultLimit, findMaxLimit)},
}

type findTool struct{}

func (findTool) Name() string { return NameFind }

func (findTool) Description() string {
	return "Find files and directories by glob. \"*\" and \"?\" stay within one path segment, \"**\" spans any number of them, " +
		"{a,b} gives alternatives. Paths come back relative to the working directory, sorted, directories ending with \"/\". " +
		".git and node_modules are skipped and symbolic links are not followed."
}

func (findTool) Schema() json.RawMessage { return schemaOf(findFields) }

func (findTool) access() access { return accessRead }

func (findTool) parse(raw json.RawMessage) (args, error) { return parseArgs(NameFind, findFields, raw) }

func (findTool) paths(a args) []string { return []string{dirArg(a)} }

func (t findTool) Run(ctx context.Context, env Env, raw json.RawMessage, progress func(string)) Result {
	a, err := t.parse(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	pattern, _ := a.str("pattern")
	limit, err := limitArg(a, NameFind, findDefaultLimit, findMaxLimit)
	if err != nil {
		return errorResult("%v", err)
	}
	glob, err := compileGlob(pattern)
	if err != nil {
		return errorResult("find: invalid pattern: %v", err)
	}
	arg := dirArg(a)
	abs, display, err := env.target(arg)
	if err != nil {
		return errorResult("find %s: %v", arg, err)
	}
	root, err := walkRoot(abs)
	if err != nil {
		return errorResult("find %s: %v", display, err)
	}
	cwdRoot, err := workspaceRoot(env.Cwd)
	if err != nil {
		return errorResult("find: %v", err)
	}
	var b strings.Builder
	found, more := 0, false
	err = walkTree(ctx, root, func(rel string, d fs.DirEntry) error {
		if !glob.match(rel) {
			return nil
		}
		if found == limit || b.Len() > findMaxBytes {
			more = true
			return fs.SkipAll
		}
		found++
		line := displayPath(cwdRoot, filepath.Join(abs, filepath.FromSlash(rel)))
		if d.IsDir() {
			line += "/"
		}
		b.WriteString(line + "\n")
		return nil
	})
	if err != nil {
		return errorResult("find %s: %v", display, plainErr(err))
	}
	details := map[string]any{"path": abs, "count": found, "truncated": more}
	if found == 0 {
		return textResult(fmt.Sprintf("No paths under %s match %q.", display, pattern), details)
	}
	if more {
		fmt.Fprintf(&b, "[Stopped after %d results; narrow the pattern or the path, or raise limit.]\n", found)
	}
	return textResult(b.String(), details)
}

// walkRoot checks that abs is a directory and returns the path to walk:
// abs with its symlinks resolved, since walking does not follow a link at
// the root either.
func walkRoot(abs string) (string, error) {
	fi, err := os.Stat(abs)
	if err != nil {
		return "", plainErr(err)
	}
	if !fi.IsDir() {
		return "", errors.New("not a directory")
	}
	return filepath.EvalSymlinks(abs)
}

// limitArg reads an optional limit argument.
func limitArg(a args, tool string, def, maxLimit int) (int, error) {
	n, ok := a.integer("limit")
	if !ok {
		return def, nil
	}
	if n < 1 || n > maxLimit {
		return 0, fmt.Errorf("invalid arguments for %s: limit must be between 1 and %d, got %d", tool, maxLimit, n)
	}
	return n, nil
}
