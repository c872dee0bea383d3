package tools

import (
	"context"
	"io/fs"
	"path/filepath"
)

// skippedDirs are never descended into by grep and find.
var skippedDirs = map[string]bool{".git": true, "node_modules": true}

// walkTree calls visit for every entry below root (not root itself) in
// lexical order, with its slash-separated path relative to root. It does not
// follow symbolic links, skips .git and node_modules, and stops when ctx is
// done or visit returns fs.SkipAll. Unreadable directories are skipped.
func walkTree(ctx context.Context, root string, visit func(rel string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == root {
			return err // an unreadable root is an error worth reporting
		}
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() && skippedDirs[d.Name()] {
			return fs.SkipDir
		}
		rel, relErr := filepath.Rel(root, p)
		if relErr != nil {
			return relErr
		}
		return visit(filepath.ToSlash(rel), d)
	})
}
