package store

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loopdev/loop/store/internal/storetest"
	"github.com/loopdev/loop/store/internal/summary"
)

// mostRecentByReadingEveryHeader is MostRecent as it was before the
// summary index served it: every header of the scope read, a malformed
// one an error.
func mostRecentByReadingEveryHeader(r *Root, workspaceID string) (string, bool, error) {
	heads, err := r.scan(workspaceID)
	if err != nil {
		return "", false, err
	}
	id, found := mostRecentOf(heads)
	return id, found, nil
}

// MostRecent through the summary index answers what reading every header
// answers, through random creations (empty or not), commits (with ties of
// updatedAt), archives, unarchives, deletes, sessions made and removed by a
// writer that does not keep the index, malformed headers the index knows
// of or not, and an index removed, cut mid-line or damaged; in this
// process and in a new one.
func TestMostRecentFromTheIndexEqualsReadingEveryHeader(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	r, _ := newTestRoot(t)
	ws, err := r.AddWorkspace(t.TempDir(), "w")
	if err != nil {
		t.Fatal(err)
	}
	scope, _ := r.scopeDir(ws.ID)
	index := filepath.Join(scope, summary.FileName)
	var open []*Session
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	var malformed []string // directories holding a malformed header
	future := int64(1) << 50
	pick := func() *Session { return open[rng.IntN(len(open))] }
	drop := func(s *Session) {
		for i, o := range open {
			if o == s {
				open = append(open[:i], open[i+1:]...)
			}
		}
	}
	check := func(step int, what string) {
		t.Helper()
		wantID, wantFound, wantErr := mostRecentByReadingEveryHeader(r, ws.ID)
		for _, q := range []*Root{r, func() *Root { o, _ := OpenRoot(r.Dir()); return o }()} {
			id, found, err := q.MostRecent(ws.ID)
			if (err != nil) != (wantErr != nil) || (wantErr != nil && err.Error() != wantErr.Error()) ||
				id != wantID || found != wantFound {
				t.Fatalf("step %d (%s): MostRecent = %q %v %v; reading every header: %q %v %v",
					step, what, id, found, err, wantID, wantFound, wantErr)
			}
		}
	}
	for step := range 400 {
		var what string
		switch op := rng.IntN(100); {
		case op < 15 || len(open) == 0:
			what = "create"
			s, err := r.Create(ws.ID, ws.Cwd)
			if err != nil {
				t.Fatal(err)
			}
			open = append(open, s)
		case op < 40:
			what = "commit"
			s := pick()
			u := future + int64(rng.IntN(6))
			if err := s.Commit(append(s.Messages(), prompt(len(s.Messages()))...), nil, func(h *Header) { h.UpdatedAt = u }); err != nil {
				t.Fatal(err)
			}
		case op < 52:
			what = "archive"
			s := pick()
			if err := s.SetArchived(s.Header().ArchivedAt == nil); err != nil {
				t.Fatal(err)
			}
		case op < 58:
			what = "delete"
			s := pick()
			if err := s.Delete(); err != nil {
				t.Fatal(err)
			}
			drop(s)
		case op < 64:
			what = "list page (builds the index)"
			r.ListPage(ws.ID, PageOptions{Limit: 1 + rng.IntN(3)})
		case op < 68:
			what = "remove the index"
			os.Remove(index)
		case op < 72:
			what = "cut the index mid-line"
			if fi, err := os.Stat(index); err == nil && fi.Size() > int64(len(summary.FileHeader))+10 {
				os.Truncate(index, fi.Size()-int64(1+rng.IntN(summary.LineSize-2)))
			}
		case op < 75:
			what = "damage a record"
			if data, err := os.ReadFile(index); err == nil && len(data) > len(summary.FileHeader)+5 {
				data[len(summary.FileHeader)+rng.IntN(len(data)-len(summary.FileHeader)-1)] ^= 0x55
				os.WriteFile(index, data, 0o600)
			}
		case op < 82:
			what = "a writer that does not keep the index"
			// Writers never create the index: with it out of the way,
			// this creation and commit are those of an older Loop.
			moved := index + ".away"
			had := os.Rename(index, moved) == nil
			s, err := r.Create(ws.ID, ws.Cwd)
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				if err := s.Commit(prompt(0), nil, func(h *Header) { h.UpdatedAt = future + 10 }); err != nil {
					t.Fatal(err)
				}
			}
			open = append(open, s)
			if had {
				os.Rename(moved, index)
			}
		case op < 86:
			what = "a session removed behind the index"
			s := pick()
			dir := filepath.Join(scope, s.ID())
			s.Close()
			drop(s)
			os.RemoveAll(dir)
		case op < 90 && len(malformed) < 3:
			what = "a malformed header"
			dir := filepath.Join(scope, newID())
			os.MkdirAll(dir, 0o700)
			os.WriteFile(filepath.Join(dir, headerFile), []byte(`{"format":"loop-session","version":1,"id":"x"}`), 0o600)
			malformed = append(malformed, dir)
			if rng.IntN(2) == 0 {
				// The index learns of it: an m record.
				r.rebuildSummaries(ws.ID, scope)
			}
		case op < 96 && len(malformed) > 0:
			what = "the malformed header removed"
			i := rng.IntN(len(malformed))
			os.RemoveAll(malformed[i])
			malformed = append(malformed[:i], malformed[i+1:]...)
		case op < 98:
			what = "a loose claim left by a writer killed between its records"
			// Any claim at or above the header is one the protocol can
			// leave: a larger updatedAt, lists it may be in. An empty
			// unarchived session is in none.
			s := pick()
			h := s.Header()
			c := summaryClaim(&h)
			c.State, c.Flags = summary.Loose, c.Flags|byte(rng.IntN(4))
			c.UpdatedAt += int64(rng.IntN(3))
			if f, err := os.OpenFile(index, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				f.Write(summary.AppendLine(nil, s.ID(), c))
				f.Close()
			}
		default:
			what = "a directory that is not a session"
			os.MkdirAll(filepath.Join(scope, newID()), 0o700)
		}
		check(step, what)
	}
}

// MostRecent reads a handful of headers when the index can vouch for the
// answer, not the scope's: a malformed header the index knows of still
// makes it an error, read every time.
func TestMostRecentReadsTheHeadersOfTheTopClaimsOnly(t *testing.T) {
	r, ffs := newTestRoot(t)
	ws, _ := r.AddWorkspace(t.TempDir(), "w")
	var last string
	for i := range 40 {
		s, err := r.Create(ws.ID, ws.Cwd)
		if err != nil {
			t.Fatal(err)
		}
		mustCommit(t, s, history(1), nil, nil)
		if i == 20 {
			if err := s.SetArchived(true); err != nil {
				t.Fatal(err)
			}
		} else {
			last = s.ID()
		}
		s.Close()
	}
	if _, err := r.ListPage(ws.ID, PageOptions{Limit: 1}); err != nil { // builds the index
		t.Fatal(err)
	}
	reads := 0
	ffs.Arm(func(op, p string) *storetest.Fault {
		if op == "read" && filepath.Base(p) == headerFile {
			reads++
		}
		return nil
	})
	id, found, err := r.MostRecent(ws.ID)
	ffs.Arm(nil)
	if err != nil || !found || id != last {
		t.Fatalf("MostRecent = %s %v %v, want %s", id, found, err, last)
	}
	if reads > 2 {
		t.Errorf("read %d headers of 40, want the top claim's", reads)
	}
	scope, _ := r.scopeDir(ws.ID)
	bad := filepath.Join(scope, newID())
	os.MkdirAll(bad, 0o700)
	os.WriteFile(filepath.Join(bad, headerFile), []byte(`{"format":"loop-session","version":1,"id":"x"}`), 0o600)
	r.rebuildSummaries(ws.ID, scope)
	for range 2 {
		if _, _, err := r.MostRecent(ws.ID); !errors.Is(err, ErrMalformed) {
			t.Fatalf("with a malformed header the index knows of: %v, want ErrMalformed", err)
		}
	}
}
