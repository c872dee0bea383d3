package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
	"github.com/loopdev/loop/store/internal/summary"
)

// stepClock advances by 0 to 2 ms a call, so sessions often tie on
// updatedAt and the id decides.
type stepClock struct {
	mu  sync.Mutex
	t   time.Time
	rnd *rand.Rand
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Duration(c.rnd.IntN(3)) * time.Millisecond)
	return c.t
}

// pagesOf walks a list page by page through ListPage and its cursors.
func pagesOf(t testing.TB, r *Root, ws string, archived bool, limit int) []Summary {
	t.Helper()
	var out []Summary
	var after *Position
	for range 10000 {
		page, err := r.ListPage(ws, PageOptions{Archived: archived, After: after, Limit: limit})
		if err != nil {
			t.Fatalf("ListPage(limit %d, after %v): %v", limit, after, err)
		}
		if len(page) > limit {
			t.Fatalf("page of %d, limit %d", len(page), limit)
		}
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
		last := page[len(page)-1]
		after = &Position{UpdatedAt: last.UpdatedAt, ID: last.ID}
	}
	t.Fatal("pages never end")
	return nil
}

// checkPagesMatchList compares every page size's walk with List.
func checkPagesMatchList(t testing.TB, r *Root, ws string, limits ...int) {
	t.Helper()
	for _, archived := range []bool{false, true} {
		want, err := r.List(ws, ListOptions{Archived: archived})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, limit := range limits {
			got := pagesOf(t, r, ws, archived, limit)
			if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Fatalf("archived=%v limit %d: pages give %v, List %v", archived, limit, ids(got), ids(want))
			}
		}
	}
}

func ids(ss []Summary) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s@%d", s.ID[len(s.ID)-4:], s.UpdatedAt))
	}
	return out
}

// checkClaimsCoverHeaders checks the protocol's invariant: every session's
// latest claim is at or above its header (an exact one equal to it).
func checkClaimsCoverHeaders(t testing.TB, r *Root, ws string) {
	t.Helper()
	sd, _ := r.scopeDir(ws)
	data, err := os.ReadFile(filepath.Join(sd, summary.FileName))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	claims, _, torn, ok := summary.ParseTorn(data)
	if !ok || torn {
		return // damaged: lists rebuild it
	}
	heads, _ := r.scan(ws)
	for i := range heads {
		h := &heads[i]
		c, ok := claims[h.ID]
		if !ok {
			continue // unknown: read directly
		}
		truth := summaryClaim(h)
		switch c.State {
		case summary.Exact:
			if c != truth {
				t.Fatalf("session %s: exact claim %+v, header %+v", h.ID, c, truth)
			}
		case summary.Loose:
			if c.UpdatedAt < truth.UpdatedAt || c.Flags&truth.Flags != truth.Flags {
				t.Fatalf("session %s: loose claim %+v below header %+v", h.ID, c, truth)
			}
		case summary.Deleted, summary.Malformed:
		default:
			t.Fatalf("session %s: claim %+v", h.ID, c)
		}
	}
}

// blindFS is a writer that does not know the summary index (an older
// Loop): it never sees the file.
type blindFS struct{ fsys.FS }

func (b blindFS) OpenFile(name string, flag int, perm os.FileMode) (fsys.File, error) {
	if filepath.Base(name) == summary.FileName {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	return b.FS.OpenFile(name, flag, perm)
}

// The property the index must keep: whatever happens to the sessions, to
// the index file and to its writes, every page walk equals List.
func TestListPagesMatchFullScanUnderRandomOperations(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(seed, 14))
			r, ffs := newTestRoot(t)
			r.now = (&stepClock{t: time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC), rnd: rnd}).now
			blind := &Root{dir: r.dir, fs: blindFS{fsys.OS{}}, now: r.now, newID: newID}
			ws, err := r.AddWorkspace(t.TempDir(), "")
			if err != nil {
				t.Fatal(err)
			}
			sd, _ := r.scopeDir(ws.ID)
			type open struct {
				s      *Session
				rounds int
			}
			var sessions []*open
			var closed []string
			pick := func() *open {
				if len(sessions) == 0 {
					return nil
				}
				return sessions[rnd.IntN(len(sessions))]
			}
			drop := func(o *open) {
				for i := range sessions {
					if sessions[i] == o {
						sessions = append(sessions[:i], sessions[i+1:]...)
						return
					}
				}
			}
			for step := range 160 {
				// Sometimes the next index operation fails.
				if rnd.IntN(6) == 0 {
					ops := []string{"open", "write", "sync", "lockshared", "remove", "rename", "read"}
					op := ops[rnd.IntN(len(ops))]
					partial := rnd.IntN(summary.LineSize)
					ffs.Arm(func(o, p string) *storetest.Fault {
						if o == op && strings.Contains(p, summary.FileName) {
							return &storetest.Fault{Err: syscall.ENOSPC, Partial: partial}
						}
						return nil
					})
				}
				var opName string
				switch k := rnd.IntN(16); {
				case k < 3 || len(sessions) == 0:
					opName = "create"
					s, err := r.Create(ws.ID, ws.Cwd)
					if err != nil {
						t.Fatal(err)
					}
					o := &open{s: s}
					if rnd.IntN(3) > 0 {
						o.rounds = 1
						mustCommit(t, s, history(1), nil, nil)
					}
					sessions = append(sessions, o)
				case k < 7:
					opName = "commit"
					o := pick()
					o.rounds++
					mustCommit(t, o.s, history(o.rounds), nil, func(h *Header) { h.Unread = true })
				case k == 7:
					opName = "pin/read/title"
					o := pick()
					o.s.SetPinned(rnd.IntN(2) == 0)
					o.s.MarkRead(len(o.s.Messages()))
					if err := o.s.SaveMeta(func(h *Header) { h.Title = fmt.Sprint("t", step) }); err != nil {
						t.Fatal(err)
					}
				case k == 8:
					opName = "archive"
					o := pick()
					if err := o.s.SetArchived(o.s.Header().ArchivedAt == nil); err != nil {
						t.Fatal(err)
					}
				case k == 9:
					opName = "close, archive without opening"
					o := pick()
					o.s.Close()
					drop(o)
					closed = append(closed, o.s.ID())
					if err := r.SetSessionArchived(ws.ID, o.s.ID(), rnd.IntN(2) == 0); err != nil {
						t.Fatal(err)
					}
				case k == 10:
					opName = "delete"
					o := pick()
					drop(o)
					if rnd.IntN(2) == 0 {
						err = o.s.Delete()
					} else {
						o.s.Close()
						err = r.DeleteSession(ws.ID, o.s.ID())
					}
					if err != nil {
						t.Fatal(err)
					}
				case k == 11:
					opName = "damage the index"
					path := filepath.Join(sd, summary.FileName)
					data, err := os.ReadFile(path)
					if err == nil && len(data) > 0 {
						switch rnd.IntN(4) {
						case 0:
							// Cut mid-line. A cut at a line end is an
							// earlier state of the file, which a reader
							// cannot tell (docs/storage.md).
							n := rnd.IntN(len(data))
							if n > 0 && data[n-1] == '\n' {
								n--
							}
							data = data[:n]
						case 1:
							data[rnd.IntN(len(data))] ^= 0x20
						case 2:
							data = append(data, "garbage\n"...)
						case 3:
							data = nil
						}
						os.WriteFile(path, data, 0o600)
					}
				case k == 12:
					opName = "remove the index"
					os.Remove(filepath.Join(sd, summary.FileName))
				case k == 13:
					opName = "older writer creates"
					s, err := blind.Create(ws.ID, ws.Cwd)
					if err != nil {
						t.Fatal(err)
					}
					mustCommit(t, s, history(1), nil, nil)
					s.Close()
					closed = append(closed, s.ID())
				case k == 14 && len(closed) > 0:
					opName = "older writer deletes"
					i := rnd.IntN(len(closed))
					id := closed[i]
					closed = append(closed[:i], closed[i+1:]...)
					if err := blind.DeleteSession(ws.ID, id); err != nil && !errors.Is(err, ErrSessionNotFound) {
						t.Fatal(err)
					}
				default:
					opName = "reopen"
					if len(closed) > 0 {
						i := rnd.IntN(len(closed))
						s, err := r.Open(ws.ID, closed[i])
						if err == nil {
							closed = append(closed[:i], closed[i+1:]...)
							sessions = append(sessions, &open{s: s, rounds: s.Header().UserMessageCount})
						}
					}
				}
				ffs.Arm(nil)
				t.Logf("step %d: %s", step, opName)
				checkClaimsCoverHeaders(t, r, ws.ID)
				checkPagesMatchList(t, r, ws.ID, 1, 2, 1+rnd.IntN(7))
			}
			for _, o := range sessions {
				o.s.Close()
			}
		})
	}
}

// Several writers (each with its own Root, so its own open files and
// flocks, as separate processes have) commit, archive and delete their
// sessions in one scope while others list and force rebuilds. Afterwards
// every claim covers its header and every page walk equals List.
func TestSummaryIndexConcurrentWriters(t *testing.T) {
	base, _ := newTestRoot(t)
	ws, err := base.AddWorkspace(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	sd, _ := base.scopeDir(ws.ID)
	// Seed the index so that writers append to it from the start.
	if _, err := base.ListPage(ws.ID, PageOptions{Limit: 5}); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers+2)
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := OpenRoot(base.dir)
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			var mine []*Session
			n := map[*Session]int{}
			for i := range rounds {
				if len(mine) == 0 || rnd.IntN(4) == 0 {
					s, err := r.Create(ws.ID, ws.Cwd)
					if err != nil {
						errs <- err
						return
					}
					mine = append(mine, s)
				}
				s := mine[rnd.IntN(len(mine))]
				var err error
				switch rnd.IntN(5) {
				case 0, 1:
					n[s]++
					err = s.Commit(history(n[s]), nil, nil)
				case 2:
					err = s.SetArchived(s.Header().ArchivedAt == nil)
				case 3:
					_, err = s.SetPinned(i%2 == 0)
				case 4:
					if len(mine) > 1 {
						err = s.Delete()
						mine = slices_delete(mine, s)
					}
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
			for _, s := range mine {
				s.Close()
			}
		}()
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		r, _ := OpenRoot(base.dir)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%5 == 4 {
				os.Remove(filepath.Join(sd, summary.FileName)) // the next list rebuilds
			}
			if _, err := r.ListPage(ws.ID, PageOptions{Limit: 3}); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkClaimsCoverHeaders(t, base, ws.ID)
	checkPagesMatchList(t, base, ws.ID, 1, 4, 50)
}

func slices_delete(ss []*Session, s *Session) []*Session {
	for i := range ss {
		if ss[i] == s {
			return append(ss[:i], ss[i+1:]...)
		}
	}
	return ss
}

// A failed write of the index never fails the commit or save it belongs
// to, and the lists that follow are still exact.
func TestSummaryIndexWriteFailureNeverFailsTheCommit(t *testing.T) {
	for _, op := range []string{"lockshared", "open", "write", "sync"} {
		for _, removeFails := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/removeFails=%v", op, removeFails), func(t *testing.T) {
				r, ffs := newTestRoot(t)
				sd, _ := r.scopeDir("")
				var ss []*Session
				for range 4 {
					s, _ := r.Create("", t.TempDir())
					mustCommit(t, s, history(1), nil, nil)
					defer s.Close()
					ss = append(ss, s)
				}
				checkPagesMatchList(t, r, "", 1, 2) // builds the index
				ffs.Arm(func(o, p string) *storetest.Fault {
					if strings.Contains(p, summary.FileName) && (o == op || (removeFails && o == "remove")) {
						return &storetest.Fault{Err: syscall.EIO, Partial: 10}
					}
					return nil
				})
				// The oldest session becomes the newest, then archived.
				if err := ss[0].Commit(history(2), nil, nil); err != nil {
					t.Fatalf("commit failed with the index: %v", err)
				}
				if err := ss[1].SetArchived(true); err != nil {
					t.Fatalf("archive failed with the index: %v", err)
				}
				ffs.Arm(nil)
				checkPagesMatchList(t, r, "", 1, 2)
				// Without its lock a writer cannot rule out a rebuild
				// that lacks its change: that always marks the scope.
				if !removeFails && op != "lockshared" {
					if _, stale := r.marks.Stale(sd); stale {
						t.Fatal("marked stale although the index could be removed")
					}
				}
				r.marks.ClearStale(sd, 0, false)
			})
		}
	}
}

// A crash after the header's publish and before the index's exact record
// leaves the loose claim, which still places the session correctly in a
// later process; a crash before the publish leaves a claim above the
// header, which a list corrects by reading it. The crash is simulated by
// failing every index write after the announcing record (and the removal
// a failure would do), then reading it from a new Root, which knows no
// stale mark of the first.
func TestListPageAfterCrashAroundTheHeaderPublish(t *testing.T) {
	for _, published := range []bool{true, false} {
		for _, change := range []string{"commit", "archive", "unarchive"} {
			t.Run(fmt.Sprintf("%s/published=%v", change, published), func(t *testing.T) {
				r, ffs := newTestRoot(t)
				var ss []*Session
				for range 5 {
					s, _ := r.Create("", t.TempDir())
					mustCommit(t, s, history(1), nil, nil)
					ss = append(ss, s)
				}
				s := ss[0]
				if change == "unarchive" {
					s.SetArchived(true)
				}
				checkPagesMatchList(t, r, "", 2) // builds the index
				writes := 0
				ffs.Arm(func(o, p string) *storetest.Fault {
					switch {
					case strings.Contains(p, summary.FileName) && o == "write":
						if writes++; writes > 1 {
							return &storetest.Fault{Err: syscall.EIO}
						}
					case strings.Contains(p, summary.FileName) && o == "remove":
						return &storetest.Fault{Err: syscall.EIO}
					case !published && o == "rename" && strings.HasSuffix(p, headerFile+".tmp"):
						return &storetest.Fault{Err: syscall.EIO}
					}
					return nil
				})
				var err error
				switch change {
				case "commit":
					err = s.Commit(history(2), nil, nil)
				case "archive":
					err = s.SetArchived(true)
				case "unarchive":
					err = s.SetArchived(false)
				}
				if published != (err == nil) {
					t.Fatalf("%s: %v", change, err)
				}
				ffs.Arm(nil)
				for _, s := range ss {
					s.Close()
				}
				later, _ := OpenRoot(r.dir)
				checkClaimsCoverHeaders(t, later, "")
				checkPagesMatchList(t, later, "", 1, 2, 3)
			})
		}
	}
}

// The first page reads the headers of that page, not of the scope.
func TestListPageReadsAboutLimitHeaders(t *testing.T) {
	r, ffs := newTestRoot(t)
	for range 40 {
		s, _ := r.Create("", t.TempDir())
		mustCommit(t, s, history(1), nil, nil)
		s.Close()
	}
	if _, err := r.ListPage("", PageOptions{Limit: 5}); err != nil { // builds the index
		t.Fatal(err)
	}
	ffs.ResetOps()
	page, err := r.ListPage("", PageOptions{Limit: 5})
	if err != nil || len(page) != 5 {
		t.Fatalf("%d, %v", len(page), err)
	}
	headers := 0
	for _, e := range ffs.Ops() {
		if strings.HasSuffix(e, headerFile) {
			headers++
		}
	}
	if headers > 6 {
		t.Fatalf("the first page of 5 read %d headers: %v", headers, ffs.Ops())
	}
}

// Sessions made or removed by a writer that does not maintain the index
// are noticed from the directory: a few are read directly, many make the
// list rebuild the index.
func TestListPageSeesSessionsWrittenWithoutTheIndex(t *testing.T) {
	for _, n := range []int{3, summary.MaxUnknown + 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r, _ := newTestRoot(t)
			sd, _ := r.scopeDir("")
			s, _ := r.Create("", t.TempDir())
			mustCommit(t, s, history(1), nil, nil)
			s.Close()
			checkPagesMatchList(t, r, "", 2)
			blind := &Root{dir: r.dir, fs: blindFS{fsys.OS{}}, now: r.now, newID: newID}
			for range n {
				s, _ := blind.Create("", t.TempDir())
				mustCommit(t, s, history(1), nil, nil)
				s.Close()
			}
			if err := blind.DeleteSession("", s.ID()); err != nil {
				t.Fatal(err)
			}
			checkPagesMatchList(t, r, "", 1, 3, 200)
			data, _ := os.ReadFile(filepath.Join(sd, summary.FileName))
			// Few are adopted, many rebuild the index: either way it
			// knows them now.
			if claims, _, ok := summary.Parse(data); !ok || len(claims) < n {
				t.Fatalf("index does not know them: %d claims", len(claims))
			}
		})
	}
}

// A damaged index (cut mid-line, a flipped byte, not an index at all) is
// rebuilt, and the list is the same as without it.
func TestListPageRebuildsADamagedIndex(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"truncated mid-line": func(b []byte) []byte { return b[:len(b)-summary.LineSize-summary.LineSize/2] },
		"flipped byte":       func(b []byte) []byte { b[len(summary.FileHeader)+5] ^= 1; return b },
		"another file":       func([]byte) []byte { return []byte("{}\n") },
		"empty":              func([]byte) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			sd, _ := r.scopeDir("")
			for i := range 6 {
				s, _ := r.Create("", t.TempDir())
				mustCommit(t, s, history(1), nil, nil)
				if i%2 == 0 {
					s.SetArchived(true)
				}
				s.Close()
			}
			checkPagesMatchList(t, r, "", 2)
			path := filepath.Join(sd, summary.FileName)
			data, _ := os.ReadFile(path)
			os.WriteFile(path, damage(data), 0o600)
			checkPagesMatchList(t, r, "", 1, 2, 4)
			data, _ = os.ReadFile(path)
			if _, _, ok := summary.Parse(data); !ok || !bytes.HasPrefix(data, []byte(summary.FileHeader)) {
				t.Fatalf("index not rebuilt: %q", data)
			}
		})
	}
}

// A malformed header is reported by a page as by List, wherever it ranks.
func TestListPageReportsMalformedHeaders(t *testing.T) {
	r, _ := newTestRoot(t)
	var last *Session
	for range 4 {
		s, _ := r.Create("", t.TempDir())
		mustCommit(t, s, history(1), nil, nil)
		s.Close()
		last = s
	}
	os.WriteFile(filepath.Join(last.Dir(), headerFile), []byte(`{"format":"loop-session","version":1,"id":"x"}`), 0o600)
	for range 2 { // without, then with the index
		page, err := r.ListPage("", PageOptions{Limit: 1})
		var lerr *ListError
		if !errors.As(err, &lerr) || len(page) != 1 {
			t.Fatalf("page %v, err %v", ids(page), err)
		}
	}
}

// A directory under the scope whose name is not a session id gets no
// record (none could name it) and does not make every list rebuild.
func TestListPageWithADirectoryThatIsNotASession(t *testing.T) {
	r, ffs := newTestRoot(t)
	sd, _ := r.scopeDir("")
	for range 3 {
		s, _ := r.Create("", t.TempDir())
		mustCommit(t, s, history(1), nil, nil)
		s.Close()
	}
	os.MkdirAll(filepath.Join(sd, "notes"), 0o700)
	os.MkdirAll(filepath.Join(sd, newID()), 0o700) // no header
	checkPagesMatchList(t, r, "", 1, 2)
	data, _ := os.ReadFile(filepath.Join(sd, summary.FileName))
	if _, _, ok := summary.Parse(data); !ok {
		t.Fatalf("index not valid: %q", data)
	}
	ffs.ResetOps()
	checkPagesMatchList(t, r, "", 2)
	for _, e := range ffs.Ops() {
		if strings.HasPrefix(e, "rename "+summary.FileName) {
			t.Fatalf("rebuilt again: %v", ffs.Ops())
		}
	}
}
