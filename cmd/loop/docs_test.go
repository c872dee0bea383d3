package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPath is a repository path as ARCHITECTURE.md and docs/ write one: in
// backquotes, with a directory and a file extension.
var docPath = regexp.MustCompile("`([a-zA-Z0-9_.-]+(?:/[a-zA-Z0-9_.-]+)+\\.(?:go|md|txtar|json|jsonl))`")

// TestArchitectureNamesOnlyFilesThatExist: the map and the docs are read
// to find code, so every file they name in backquotes must exist.
// ARCHITECTURE.md once named cmd/loop/migrate.go, which never did.
func TestArchitectureNamesOnlyFilesThatExist(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "ARCHITECTURE.md"), filepath.Join(root, "README.md"))
	checked := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docPath.FindAllStringSubmatch(string(text), -1) {
			name := m[1]
			if strings.HasPrefix(name, "~") || strings.Contains(name, "...") {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(name))); err != nil {
				rel, _ := filepath.Rel(root, doc)
				t.Errorf("%s names %s, which does not exist", rel, name)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no file name found in the docs: the pattern no longer matches how they cite files")
	}
}
