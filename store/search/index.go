package search

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
	"github.com/loopdev/loop/store/internal/fsys"
)

// The search index (docs/storage.md, Search index) is derived data: a
// per-scope append-only file of folded message text and session metadata
// under sessions/<scope>/.search/. Commits and metadata saves append to it
// (best effort: a failed append never fails the write, it marks the scope
// stale); a search rebuilds it when missing or corrupt, catches it up when
// it lags the headers, and checks every hit against the logs.
const (
	searchDirName   = ".search"
	searchIndexName = "index"
	// Tool results go to a file of their own: they are most of the text,
	// and only a search with includeTools reads them.
	searchToolsName = "tools"
	// Version 2 says in each "h" line which messages its append holds, so
	// a reader finds what an append lost (a crash between a commit and its
	// append) by the gap it leaves. Version 3 adds to each "h" line who
	// wrote it (a session's writer, whose line also states its message
	// count and so cuts what a rewind dropped, or a catch-up), and "p"
	// lines, which give a fork its parent's part without its text. An
	// index of an older version is rebuilt.
	searchMagic = "loop-search\t3\n"
)

// The writers of an "h" line (its last field).
const (
	// headWriter: the session's writer, after a commit, a rewind or a
	// metadata save (or a rebuild, from the logs): the session now has
	// exactly "to" messages, and the append holds messages [from, to);
	// what the index held of the session from "from" on before is no
	// longer its history.
	headWriter = 'c'
	// headCatchUp: a search that caught the index up from the logs: the
	// append holds messages [from, to) and says nothing of the rest.
	headCatchUp = 'a'
)

// searchLockWait bounds how long an append waits for another writer (a
// rebuild can hold the lock for seconds; the commit must not wait that long).
const searchLockWait = 100 * time.Millisecond

func roleCode(role string) byte {
	switch role {
	case convo.RoleUser:
		return 'u'
	case convo.RoleAssistant:
		return 'a'
	}
	return 't'
}

func roleName(c byte) string {
	switch c {
	case 'u':
		return convo.RoleUser
	case 'a':
		return convo.RoleAssistant
	}
	return convo.RoleToolResult
}

// searchLines are lines to append: to the index, and to the tools file.
type searchLines struct{ main, tools []byte }

// addMessages appends an "m" line for each message of msgs with text
// (tool results to tools); msgs[0] has history index from.
func (l *searchLines) addMessages(f *folder, id string, createdAt int64, from int, msgs []convo.Message) {
	var text []byte
	for i := range msgs {
		dst := &l.main
		if msgs[i].Role == convo.RoleToolResult {
			dst = &l.tools
		}
		*dst = appendSearchMessage(*dst, f, &text, id, createdAt, from+i, &msgs[i])
	}
}

// appendSearchMessage appends the "m" line of message index of a session,
// if it has text; text is scratch space.
func appendSearchMessage(dst []byte, f *folder, text *[]byte, id string, createdAt int64, index int, m *convo.Message) []byte {
	{
		s := messageSearchText(m)
		if s == "" {
			return dst
		}
		*text = f.fold((*text)[:0], s, maxIndexedText)
		if len(*text) == 0 {
			return dst
		}
		dst = append(dst, "m\t"...)
		dst = append(dst, id...)
		dst = append(dst, '\t')
		dst = strconv.AppendInt(dst, createdAt, 10)
		dst = append(dst, '\t')
		dst = strconv.AppendInt(dst, int64(index), 10)
		dst = append(dst, '\t', roleCode(m.Role), '\t')
		dst = strconv.AppendUint(dst, uint64(fsys.CRC32C(0, *text)), 16)
		dst = append(dst, '\t')
		dst = append(dst, *text...)
		dst = append(dst, '\n')
	}
	return dst
}

// appendSearchHeader appends an "h" line: the session's metadata as of h,
// r, the messages whose "m" lines the append it ends holds (empty: a
// metadata save, which holds none), and its writer (headWriter, whose r
// ends at h's message count, or headCatchUp).
func appendSearchHeader(dst []byte, h *store.Header, r msgRange, writer byte) []byte {
	dst = append(dst, "h\t"...)
	dst = append(dst, h.ID...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, h.CreatedAt, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, h.UpdatedAt, 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.from), 10)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(r.to), 10)
	if h.ArchivedAt != nil {
		dst = append(dst, "\t1\t"...)
	} else {
		dst = append(dst, "\t0\t"...)
	}
	return append(dst, writer, '\n')
}

// appendSearchParent appends a "p" line: fork h's first messages are its
// parent's (h.Parent.MessageCount of them), whose lines the index holds
// already; a search finds them for the fork too.
func appendSearchParent(dst []byte, h *store.Header) []byte {
	dst = append(dst, "p\t"...)
	dst = append(dst, h.ID...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, h.CreatedAt, 10)
	dst = append(dst, '\t')
	dst = append(dst, h.Parent.SessionID...)
	dst = append(dst, '\t')
	dst = strconv.AppendInt(dst, int64(h.Parent.MessageCount), 10)
	return append(dst, '\n')
}

// appendSearch adds lines to a scope's index. A missing index is left
// missing (the next search builds it whole from the logs), so this never
// creates one that lacks older sessions.
func appendSearch(fs fsys.FS, scopeDir string, l *searchLines) error {
	dir := filepath.Join(scopeDir, searchDirName)
	lock, err := lockWait(fs, dir, searchLockWait)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer lock.Close()
	// Tool lines first: the index's "h" line that says they are there
	// comes after them.
	if len(l.tools) > 0 {
		if err := appendFile(fs, filepath.Join(dir, searchToolsName), l.tools); err != nil {
			return err
		}
	}
	return appendFile(fs, filepath.Join(dir, searchIndexName), l.main)
}

func appendFile(fs fsys.FS, path string, data []byte) error {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return f.Close()
}

// Index is the search index of a data root's scopes: it answers Search,
// and keeps the index files in step with the root's writes as a
// store.Observer (store/observer.go). A commit appends the messages its
// session handle committed and the index has not taken yet (Commit.From:
// the new ones, and any a failed append left out), then an "h" line that
// names exactly those and carries the metadata. It claims nothing it did
// not append: what a crash kept out of the index before the handle opened
// stays a gap a search finds and fills (searchSess.holes). A failed append
// never fails the commit: it marks the scope stale in this process and
// returns the error, so that the session's next commit offers those
// messages again.
//
// It is safe for concurrent use.
type Index struct {
	root *store.Root
	// fs is the store's file-system seam (store/internal/fsys), so that
	// tests can fail any step of an append, a rebuild or a read and check
	// that a commit, and the answers of a search, never depend on it.
	fs fsys.FS

	mu sync.Mutex
	// stale: scope directories the next search checks against the headers
	// again, because an append of this process failed there.
	stale map[string]bool
	// checked: per scope directory, the inode of the index file this
	// process last checked against the headers (scan.go).
	checked map[string]uint64
}

// New returns the search index of root and adds it to root's observers:
// make it before opening sessions, so that their commits reach it.
func New(root *store.Root) *Index {
	ix := &Index{root: root, fs: fsys.OS{}, stale: map[string]bool{}, checked: map[string]uint64{}}
	root.AddObserver(ix)
	return ix
}

// Publishing is nothing: the index is written after a commit, never before.
func (*Index) Publishing(string, string, *store.Header, *store.Header) store.Publication {
	return nil
}

// Deleted is nothing: a search checks every hit against the headers.
func (*Index) Deleted(string, string) {}

// Committed appends a commit's messages from c.From and its metadata in
// a writer's "h" line. A fork's first commit (and a rewind of a fork into
// its parent's part) starts at its parent's part, whose messages it does
// not copy: a "p" line names the parent instead.
func (ix *Index) Committed(c *store.Commit) error {
	var l searchLines
	n := len(c.Messages)
	from := min(c.From, n)
	if p := c.Header.Parent; p != nil && from <= p.MessageCount && p.MessageCount <= n {
		l.main = appendSearchParent(l.main, c.Header)
		from = p.MessageCount
	}
	if from < n {
		l.addMessages(newFolder(), c.Header.ID, c.Header.CreatedAt, from, c.Messages[from:])
	}
	l.main = appendSearchHeader(l.main, c.Header, msgRange{from: from, to: n}, headWriter)
	return ix.append(c.ScopeDir, &l)
}

// SavedMeta appends a session's new metadata, in a writer's "h" line that
// holds no messages (the header's count: a fork a crash kept from being
// told, or messages an append lost, show as a gap).
func (ix *Index) SavedMeta(scopeDir string, h *store.Header) error {
	r := msgRange{from: h.MessageCount, to: h.MessageCount}
	return ix.append(scopeDir, &searchLines{main: appendSearchHeader(nil, h, r, headWriter)})
}

// append adds l to the scope's index, marking the scope stale when it
// cannot, also when it panics (the store recovers the panic, and the next
// search must still find what the index lacks).
func (ix *Index) append(scopeDir string, l *searchLines) error {
	appended := false
	defer func() {
		if !appended {
			ix.markStale(scopeDir)
		}
	}()
	if err := appendSearch(ix.fs, scopeDir, l); err != nil {
		return err
	}
	appended = true
	return nil
}

func (ix *Index) markStale(scopeDir string) {
	ix.mu.Lock()
	ix.stale[scopeDir] = true
	ix.mu.Unlock()
}

func (ix *Index) isStale(scopeDir string) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.stale[scopeDir]
}

func (ix *Index) clearStale(scopeDir string) {
	ix.mu.Lock()
	delete(ix.stale, scopeDir)
	ix.mu.Unlock()
}

// rebuildSearch writes a scope's index and tools file again from its
// sessions' logs, one session at a time, and replaces the old ones (the
// tools file first, so that a new index never names tool lines that are
// not there).
func (ix *Index) rebuildSearch(ctx context.Context, scopeDir, workspaceID string) error {
	dir := filepath.Join(scopeDir, searchDirName)
	if err := fsys.EnsureDir(ix.fs, dir); err != nil {
		return err
	}
	lock, err := lockWait(ix.fs, dir, 10*time.Second)
	if err != nil {
		return err
	}
	defer lock.Close()
	heads, err := ix.root.Headers(workspaceID)
	var lerr *store.ListError
	if err != nil && !errors.As(err, &lerr) && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var ws [2]*appendWriter
	defer func() {
		for _, w := range ws {
			if w != nil && w.tmp != "" {
				w.f.Close()
				ix.fs.RemoveAll(w.tmp)
			}
		}
	}()
	for k, name := range []string{searchIndexName, searchToolsName} {
		f, tmp, err := fsys.CreateUnique(ix.fs, filepath.Join(dir, name+".tmp-"))
		if err != nil {
			return err
		}
		ws[k] = &appendWriter{f: f, tmp: tmp, path: filepath.Join(dir, name), buf: []byte(searchMagic)}
	}
	fo := newFolder()
	for i := range heads {
		if err := ctx.Err(); err != nil {
			return err
		}
		h := &heads[i]
		if h.MessageCount > 0 {
			msgs, err := ix.root.ReadMessages(workspaceID, h.ID, 0, h.MessageCount)
			if err != nil {
				// A session that cannot be read is left out; its hits
				// could not be checked against its log anyway.
				continue
			}
			l := searchLines{main: ws[0].buf, tools: ws[1].buf}
			l.addMessages(fo, h.ID, h.CreatedAt, 0, msgs)
			ws[0].buf, ws[1].buf = l.main, l.tools
		}
		ws[0].buf = appendSearchHeader(ws[0].buf, h, msgRange{0, h.MessageCount}, headWriter)
		for _, w := range ws {
			if err := w.flushIf(1 << 20); err != nil {
				return err
			}
		}
	}
	// No fsync: the index is derived, and a lost or torn one is rebuilt.
	for _, w := range []*appendWriter{ws[1], ws[0]} {
		if err := w.flushIf(0); err != nil {
			return err
		}
		if err := w.f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", w.tmp, err)
		}
		if err := ix.fs.Rename(w.tmp, w.path); err != nil {
			return fmt.Errorf("publish search index: %w", err)
		}
		w.tmp = ""
	}
	return nil
}

// catchUpSearch appends what the index lacks of sessions it lags: the
// messages of each gap, read from the log, each gap with its own "h" line,
// and the metadata of the header. It reads only the gaps, so it costs what
// is missing, not the sessions' histories.
func (ix *Index) catchUpSearch(scopeDir, workspaceID string, lag []searchLag) error {
	fo := newFolder()
	var l searchLines
	for _, g := range lag {
		h := &g.head
		if len(g.holes) == 0 {
			l.main = appendSearchHeader(l.main, h, msgRange{}, headCatchUp)
			continue
		}
		for _, hole := range g.holes {
			msgs, err := ix.root.ReadMessages(workspaceID, h.ID, hole.from, hole.to)
			if err != nil {
				// Left out: its hits could not be checked against the
				// log anyway.
				break
			}
			l.addMessages(fo, h.ID, h.CreatedAt, hole.from, msgs)
			l.main = appendSearchHeader(l.main, h, hole, headCatchUp)
		}
	}
	if len(l.main) == 0 {
		return nil
	}
	return appendSearch(ix.fs, scopeDir, &l)
}

// searchLag is a session the index lags: its header, and the messages the
// index lacks (none: only the metadata is behind).
type searchLag struct {
	head  store.Header
	holes []msgRange
}

// appendWriter buffers sequential writes to a new file.
type appendWriter struct {
	f         fsys.File
	tmp, path string
	off       int64
	buf       []byte
}

func (w *appendWriter) flushIf(min int) error {
	if len(w.buf) == 0 || len(w.buf) < min {
		return nil
	}
	if _, err := w.f.WriteAt(w.buf, w.off); err != nil {
		return fmt.Errorf("write search index: %w", err)
	}
	w.off += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}
