package store

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/loopdev/loop/store/internal/storetest"
)

// importOf is a valid import of one round into nowhere in particular.
func importOf(t *testing.T, source string) *Imported {
	return &Imported{Header: Header{Cwd: t.TempDir(), CreatedAt: 1, UpdatedAt: 2,
		Migration: &MigrationRecord{From: ExportFormat, SourcePath: "/" + source + ".json", SourceID: source}},
		Messages: prompt(0)}
}

// ImportInto registers the directory's workspace only once the session is
// written: a source the store refuses leaves the registry unwritten, and
// an import that fails while writing leaves at most an entry marked
// removed, never listed, whose id the directory gets when it is added.
func TestImportIntoRegistersTheWorkspaceOnlyOnceTheSessionIsWritten(t *testing.T) {
	r, ffs := newTestRoot(t)
	dir := t.TempDir()
	refused := importOf(t, "refused")
	refused.Timings = []PromptTiming{{UserMessageIndex: 0, MessageStartIndex: Some(9)}}
	if _, _, _, err := r.ImportInto(refused, Checksum([]byte("refused")), dir); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ImportInto = %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(r.registryPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused import wrote the registry: %v", err)
	}
	ffs.FailOnce("open", headerFile, storetest.Fault{Err: storetest.ErrInjected})
	if _, _, _, err := r.ImportInto(importOf(t, "disk"), Checksum([]byte("disk")), dir); !errors.Is(err, storetest.ErrInjected) {
		t.Fatalf("ImportInto = %v, want the injected fault", err)
	}
	if list, err := r.Workspaces(); err != nil || len(list) != 0 {
		t.Fatalf("workspaces %v, %v after a failed import", list, err)
	}
	s, ws, existed, err := r.ImportInto(importOf(t, "good"), Checksum([]byte("good")), dir)
	if err != nil || existed {
		t.Fatalf("ImportInto = %v, existed %v", err, existed)
	}
	defer s.Close()
	if list, _ := r.Workspaces(); len(list) != 1 || list[0] != ws || *s.Header().WorkspaceID != ws.ID {
		t.Fatalf("workspaces %v, session in %v, returned %v", list, *s.Header().WorkspaceID, ws)
	}
	if again, err := r.AddWorkspace(dir, ""); err != nil || again.ID != ws.ID {
		t.Fatalf("AddWorkspace = %v, %v, want %s", again, err, ws.ID)
	}
}

// Another process that adds the directory while an import into it is
// being written gets the workspace the session is written into: the
// import reserved the id before writing.
func TestImportIntoAgreesOnTheWorkspaceWithAConcurrentAdd(t *testing.T) {
	rA, ffsA := newTestRoot(t)
	rB, err := OpenRoot(rA.Dir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var added Workspace
	var addErr error
	ffsA.Arm(func(op, p string) *storetest.Fault {
		if op == "open" && strings.Contains(p, ".tmp-") && strings.HasSuffix(p, headerFile) && added.ID == "" {
			added, addErr = rB.AddWorkspace(dir, "")
		}
		return nil
	})
	s, ws, _, err := rA.ImportInto(importOf(t, "a"), Checksum([]byte("a")), dir)
	if err != nil || addErr != nil {
		t.Fatalf("import %v, add %v", err, addErr)
	}
	defer s.Close()
	list, _ := rA.Workspaces()
	if added.ID != ws.ID || *s.Header().WorkspaceID != ws.ID || len(list) != 1 {
		t.Fatalf("added %v, imported into %v, registry %v", added, ws, list)
	}
	if got, err := rB.List(ws.ID, ListOptions{}); err != nil || len(got) != 1 {
		t.Fatalf("the workspace lists %v, %v", got, err)
	}
}
