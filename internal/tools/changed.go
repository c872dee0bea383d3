package tools

import "encoding/json"

// ChangedFile is the file a write or edit call would change, for the file
// checkpoint taken before it runs (engine/filecheckpoint.go): its path
// with every symbolic link followed, as the write itself follows them
// (writeFileAtomic). It is "" for another tool, arguments the call would
// refuse, or a path the preset keeps it from.
func ChangedFile(name string, raw json.RawMessage, env Env) string {
	if name != NameWrite && name != NameEdit {
		return ""
	}
	b, ok := lookupBuiltin(name)
	if !ok {
		return ""
	}
	a, err := b.parse(raw)
	if err != nil {
		return ""
	}
	paths := b.paths(a)
	if len(paths) != 1 || paths[0] == "" {
		return ""
	}
	abs, _, err := env.target(paths[0])
	if err != nil {
		return ""
	}
	real, err := realPath(abs)
	if err != nil {
		return ""
	}
	return real
}

// RealPath resolves every symbolic link in the absolute path p, tolerating
// a missing tail, as the file tools do.
func RealPath(p string) (string, error) { return realPath(p) }
