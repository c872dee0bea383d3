package store_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/search"
)

// The golden session's scope has its search index pinned too (derived
// data, docs/storage.md, Search index): built by a search after the first
// commit, then appended to by the second commit, the pin and the archive.
func TestGoldenSearchIndexIsWrittenByteForByte(t *testing.T) {
	var ix *search.Index
	r := store.WriteGoldenWith(t, func(r *store.Root) { ix = search.New(r) }, func(*store.Root) {
		if _, err := ix.Search(context.Background(), search.Query{Text: "go", Scopes: []string{store.GoldenWorkspace}}); err != nil {
			t.Fatal(err)
		}
	})
	for _, rel := range store.GoldenSearchFiles {
		got, err := os.ReadFile(filepath.Join(r.Dir(), rel))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(store.GoldenDir, rel)
		if store.UpdateGolden() {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./store -run Golden -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\ngot\n%s\nwant\n%s", rel, path, got, want)
		}
	}
}

// The golden search index is read as written: nothing to rebuild or catch
// up.
func TestGoldenSearchIndexIsReadAsWritten(t *testing.T) {
	r, err := store.OpenRoot(store.CopyGoldenFrom(t, store.GoldenDir, append(slices.Clone(store.GoldenFiles), store.GoldenSearchFiles...)))
	if err != nil {
		t.Fatal(err)
	}
	ix := search.New(r)
	index := filepath.Join(r.Dir(), store.GoldenSearchFiles[0])
	before, _ := os.ReadFile(index)
	res, err := ix.Search(context.Background(), search.Query{Text: "package", Scopes: []string{store.GoldenWorkspace}, IncludeTools: true, Archived: true})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].MessageIndex != 2 {
		t.Errorf("search of the golden index: %+v, %v", res.Hits, err)
	}
	if after, _ := os.ReadFile(index); !bytes.Equal(after, before) {
		t.Errorf("searching the golden index changed it:\n%s", after)
	}
}
