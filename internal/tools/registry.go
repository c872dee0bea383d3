package tools

import "encoding/json"

// Names of the built-in tools.
const (
	NameRead  = "read"
	NameWrite = "write"
	NameEdit  = "edit"
	NameBash  = "bash"
	NameLs    = "ls"
	NameGrep  = "grep"
	NameFind  = "find"
)

// access is what a tool does, which is what presets decide on.
type access int

const (
	accessRead  access = iota // reads files in the workspace
	accessWrite               // changes files
	accessExec                // runs arbitrary commands
)

// builtin is what Decide needs from a built-in tool beyond Tool.
type builtin interface {
	Tool
	access() access
	// parse validates the arguments (the same check Run makes).
	parse(raw json.RawMessage) (args, error)
	// paths lists the path arguments of a validated call, "." for an
	// omitted directory argument.
	paths(a args) []string
}

// Builtin returns the built-in tools in a stable order: read, write, edit,
// bash, ls, grep, find. Tools are stateless values; each call returns a new
// slice the caller may modify.
func Builtin() []Tool {
	return []Tool{readTool{}, writeTool{}, editTool{}, bashTool{}, lsTool{}, grepTool{}, findTool{}}
}

// Lookup returns the built-in tool called name.
func Lookup(name string) (Tool, bool) {
	for _, t := range Builtin() {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

func lookupBuiltin(name string) (builtin, bool) {
	t, ok := Lookup(name)
	if !ok {
		return nil, false
	}
	b, ok := t.(builtin)
	return b, ok
}

// Kind is the ACP ToolKind of a tool: read, edit, execute, search, or other
// for tools that are not built in.
func Kind(name string) string {
	switch name {
	case NameRead, NameLs:
		return "read"
	case NameWrite, NameEdit:
		return "edit"
	case NameBash:
		return "execute"
	case NameGrep, NameFind:
		return "search"
	}
	return "other"
}

// Title is a short human label of a call, e.g. "Read main.go" or "Run go
// test ./...", for tool-call cards; it falls back to the tool name.
func Title(name string, raw json.RawMessage) string {
	b, ok := lookupBuiltin(name)
	if !ok {
		return name
	}
	a, err := b.parse(raw)
	if err != nil {
		return name
	}
	s := func(k string) string { v, _ := a.str(k); return v }
	clip := func(v string) string {
		r := []rune(v)
		for i, c := range r {
			if c == '\n' {
				r = append(r[:i:i], []rune(" ...")...)
				break
			}
		}
		if len(r) > 80 {
			r = append(r[:77:77], []rune("...")...)
		}
		return string(r)
	}
	switch name {
	case NameRead:
		return "Read " + s("path")
	case NameWrite:
		return "Write " + s("path")
	case NameEdit:
		return "Edit " + s("path")
	case NameBash:
		return "Run " + clip(s("command"))
	case NameLs:
		p := s("path")
		if p == "" {
			p = "."
		}
		return "List " + p
	case NameGrep:
		return "Search " + clip(s("pattern"))
	case NameFind:
		return "Find " + clip(s("pattern"))
	}
	return name
}
