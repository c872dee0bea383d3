package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

const lsMaxEntries = 500

var lsFields = []field{
	{name: "path", typ: "string", desc: "Directory to list, relative to the working directory (default: the working directory)."},
}

type lsTool struct{}

func (lsTool) Name() string { return NameLs }

func (lsTool) Description() string {
	return fmt.Sprintf("List a directory's entries, sorted by name, hidden ones included. Directories end with \"/\"; "+
		"symbolic links show as \"name -> target\". At most %d entries; use find or grep to search deeper.", lsMaxEntries)
}

func (lsTool) Schema() json.RawMessage { return schemaOf(lsFields) }

func (lsTool) access() access { return accessRead }

func (lsTool) parse(raw json.RawMessage) (args, error) { return parseArgs(NameLs, lsFields, raw) }

func (lsTool) paths(a args) []string { return []string{dirArg(a)} }

// dirArg is a tool's optional path argument, "." when omitted or empty.
func dirArg(a args) string {
	p, _ := a.str("path")
	if p == "" {
		return "."
	}
	return p
}

func (t lsTool) Run(ctx context.Context, env Env, raw json.RawMessage, progress func(string)) Result {
	a, err := t.parse(raw)
	if err != nil {
		return errorResult("%v", err)
	}
	arg := dirArg(a)
	abs, display, err := env.target(arg)
	if err != nil {
		return errorResult("ls %s: %v", arg, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return errorResult("ls %s: %v", display, plainErr(err))
	}
	if !fi.IsDir() {
		return errorResult("ls %s: not a directory; use read to see a file", display)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return errorResult("ls %s: %v", display, plainErr(err))
	}
	var b strings.Builder
	for i, e := range entries {
		if i == lsMaxEntries {
			fmt.Fprintf(&b, "[%d more entries not shown; use find with a pattern to narrow down]\n", len(entries)-lsMaxEntries)
			break
		}
		name := e.Name()
		switch {
		case e.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(filepath.Join(abs, name))
			if err != nil {
				target = "?"
			}
			if st, err := os.Stat(filepath.Join(abs, name)); err == nil && st.IsDir() {
				target += "/"
			}
			fmt.Fprintf(&b, "%s -> %s\n", name, target)
		case e.IsDir():
			b.WriteString(name + "/\n")
		default:
			b.WriteString(name + "\n")
		}
	}
	details := map[string]any{"path": abs, "entries": len(entries), "truncated": len(entries) > lsMaxEntries}
	if len(entries) == 0 {
		return textResult(fmt.Sprintf("%s is an empty directory.", display), details)
	}
	return textResult(b.String(), details)
}
