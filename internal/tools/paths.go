package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxSymlinks bounds symlink expansion, as the kernel's ELOOP does.
const maxSymlinks = 40

// absPath turns a path argument into a clean absolute path: relative paths
// join cwd. Tools open exactly this path, so lexical cleaning (which folds
// "link/.." without following link) cannot make them touch something other
// than what the containment check saw.
func absPath(cwd, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(cwd, p)
}

// workspaceRoot returns the absolute, clean form of cwd.
func workspaceRoot(cwd string) (string, error) {
	if cwd == "" {
		return "", errors.New("no working directory is set")
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("working directory %q: %w", cwd, err)
	}
	return abs, nil
}

// realPath resolves every symbolic link in the absolute path p, like
// realpath(3), but tolerates a missing tail: once a component does not
// exist, the rest is appended as written. A dangling symlink resolves to its
// target, so creating a file through it is seen as creating the target.
func realPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("realPath: %q is not absolute", p)
	}
	rest := strings.Split(filepath.ToSlash(p), "/")
	resolved := string(filepath.Separator)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved) // resolved holds no links, so ".." is lexical here
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if err != nil {
			// Missing (or unreadable: the OS cannot go further either):
			// the remainder cannot hold links.
			tail := filepath.Join(append([]string{next}, rest...)...)
			return filepath.Clean(tail), nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		links++
		if links > maxSymlinks {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("read symlink %s: %w", next, err)
		}
		if filepath.IsAbs(target) {
			resolved = string(filepath.Separator)
		}
		rest = append(strings.Split(filepath.ToSlash(target), "/"), rest...)
	}
	return resolved, nil
}

// within reports whether p is root or below it; both are clean and absolute.
func within(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}

// escape explains, in words for the model, why the path argument arg leaves
// the workspace cwd; it returns "" when arg stays inside. A path counts as
// inside when what it finally names (every symlink followed, a missing tail
// taken as written) is the workspace or below it.
func escape(cwd, arg string) (string, error) {
	root, err := workspaceRoot(cwd)
	if err != nil {
		return "", err
	}
	realRoot, err := realPath(root)
	if err != nil {
		return "", fmt.Errorf("resolve working directory: %w", err)
	}
	abs := absPath(root, arg)
	real, err := realPath(abs)
	if err != nil {
		return fmt.Sprintf("path %q cannot be resolved (%v), so it cannot be shown to stay inside the workspace %s", arg, err, root), nil
	}
	if within(realRoot, real) {
		return "", nil
	}
	lexicallyInside := within(root, abs) || within(realRoot, abs)
	switch {
	case lexicallyInside:
		return fmt.Sprintf("path %q leads through a symbolic link to %s, which is outside the workspace %s", arg, real, root), nil
	case filepath.IsAbs(arg):
		return fmt.Sprintf("path %q is outside the workspace %s", arg, root), nil
	default:
		return fmt.Sprintf("path %q leaves the workspace %s through \"..\" (it names %s)", arg, root, abs), nil
	}
}

// confined reports whether p keeps file tools inside the workspace.
func (p Preset) confined() bool { return p.orDefault() != PresetFullAccess }

// target resolves a path argument for a file tool: the clean absolute path
// to open, the path to show the model (relative to the workspace when
// inside it), and, under a confined preset, an error when it escapes.
func (e Env) target(arg string) (abs, display string, err error) {
	root, err := workspaceRoot(e.Cwd)
	if err != nil {
		return "", "", err
	}
	if e.Preset.confined() {
		reason, err := escape(root, arg)
		if err != nil {
			return "", "", err
		}
		if reason != "" {
			return "", "", fmt.Errorf("permission denied: %s", reason)
		}
	}
	abs = absPath(root, arg)
	return abs, displayPath(root, abs), nil
}

// displayPath shows abs relative to root when it is inside, else absolute.
func displayPath(root, abs string) string {
	if within(root, abs) {
		rel, err := filepath.Rel(root, abs)
		if err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return abs
}
