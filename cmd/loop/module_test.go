package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/zip"
)

// TestModuleZipAcceptsEveryFileName checks the module's files the way the
// module proxy and `go install <module>/cmd/loop@<version>` do
// (golang.org/x/mod/zip): one name that Windows reserves (aux, con, nul,
// ...), that is not portable, or that differs from another only in case
// makes the whole module impossible to download, on every system.
func TestModuleZipAcceptsEveryFileName(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var cf zip.CheckedFiles
	if files, ok := committableFiles(t, root); ok {
		// A release zips what is committed; ignored build output and
		// installed npm packages under testdata never reach it.
		cf, _ = zip.CheckFiles(files)
	} else {
		cf, _ = zip.CheckDir(root)
	}
	for _, fe := range cf.Invalid {
		t.Errorf("%s: %v", fe.Path, fe.Err)
	}
	if cf.SizeError != nil {
		t.Errorf("module too large: %v", cf.SizeError)
	}
	if len(cf.Valid) == 0 {
		t.Fatal("no file of the module was checked")
	}
}

// committableFiles lists the files a commit of the work tree would hold
// (tracked, and untracked but not ignored), as zip.Files; ok is false when
// root is not a git work tree.
func committableFiles(t *testing.T, root string) (files []zip.File, ok bool) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Logf("not a git work tree (%v): checking the whole directory", err)
		return nil, false
	}
	for _, p := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p == "" {
			continue
		}
		full := filepath.Join(root, filepath.FromSlash(p))
		// A file deleted in the work tree but not yet in the index is
		// not part of the next commit.
		if _, err := os.Lstat(full); err != nil {
			continue
		}
		files = append(files, repoFile{path: p, full: full})
	}
	return files, true
}

// repoFile is a zip.File backed by a file of the work tree.
type repoFile struct{ path, full string }

func (f repoFile) Path() string                 { return f.path }
func (f repoFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.full) }
func (f repoFile) Open() (io.ReadCloser, error) { return os.Open(f.full) }
