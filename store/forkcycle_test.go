package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/store/internal/fsys"
)

// cycleParents forks s at 8 messages, then rewrites s's header by hand to
// name that fork as its own parent, with checksums that agree: files
// edited or damaged by hand. It returns the fork, open.
func cycleParents(t *testing.T, s *Session) *Session {
	t.Helper()
	f := mustFork(t, s, 8, "")
	ref, sdir := *f.Header().Parent, s.Dir()
	hpath := filepath.Join(sdir, headerFile)
	data, err := os.ReadFile(hpath)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHeader(data, hpath)
	if err != nil {
		t.Fatal(err)
	}
	mdata, err := os.ReadFile(filepath.Join(sdir, messagesFile))
	if err != nil {
		t.Fatal(err)
	}
	h.Version = ForkFormatVersion
	h.Parent = &ParentRef{SessionID: f.ID(), MessageCount: ref.MessageCount, UserMessageCount: ref.UserMessageCount, MessagesCRC: ref.MessagesCRC, Timings: ref.Timings}
	h.MessagesCRC = fsys.CRC32C(ref.MessagesCRC, mdata[:h.MessagesBytes])
	enc, err := encodeHeader(&h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hpath, enc, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// wantCycle fails unless err reports parents forming a cycle as malformed.
func wantCycle(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("%s, whose parents form a cycle: %v, want ErrMalformed naming the cycle", what, err)
	}
	if len(err.Error()) > 1000 {
		t.Fatalf("%s: an error of %d bytes: %.300s…", what, len(err.Error()), err)
	}
}

// Headers whose parents form a cycle (a fork's parent naming the fork:
// files edited or damaged by hand) are malformed: opening either session
// reports it, as any other broken invariant, and neither recurses without
// end (a stack overflow is fatal to the whole server) nor runs the process
// out of file descriptors.
func TestForkParentsFormingACycleAreMalformedNotACrash(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	f := cycleParents(t, s)
	f.Close()
	s.Close()
	for _, id := range []string{f.ID(), s.ID()} {
		o, err := r.Open("", id)
		if err == nil {
			o.Close()
		}
		wantCycle(t, "opening "+id, err)
	}
}

// A fork opened before its parents came to form a cycle finds the cycle
// when it next reads them: forking it inside the part its parent holds
// reads the parents' headers for the part's checksum (prefixCRCAt).
func TestForkingInsideAPartWhoseParentsFormACycleIsMalformed(t *testing.T) {
	r, _ := newTestRoot(t)
	s := storedWith(t, r, t.TempDir(), 3)
	defer s.Close()
	f := cycleParents(t, s)
	defer f.Close()
	g, err := f.Fork(4, "")
	if err == nil {
		g.Close()
	}
	wantCycle(t, "forking at 4 a fork at 8", err)
}
