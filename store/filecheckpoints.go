package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/loopdev/loop/store/internal/fsys"
)

// File checkpoints (docs/storage.md, "File checkpoints"): what Loop needs
// to put a session's workspace files back to their state before a run.
// They live in the session's file-checkpoints directory, so they go with
// the session when it is deleted: log, the records below with the
// pre-images of the files write and edit touch, and, for bash in a git
// workspace, a private git directory (git) and its index (index), which
// the engine's snapshots use (internal/gitsnap); the workspace's own
// repository is never written.
//
// The log is append-only: each record is one JSON line, and a pre-image's
// content follows its line as raw bytes (the line says how many, and
// their CRC-32C). A record is durable (fsynced) before the tool it
// precedes changes a file. A torn tail (a crash in the middle of an
// append) is cut off when the log is next opened for writing. Content is
// kept once per content id: a later pre-image with the same id refers to
// the earlier bytes.

// Kinds of checkpoint records.
const (
	// CheckpointPre is a file's state before a run first changed it
	// with write or edit, its content kept in the log.
	CheckpointPre = "pre"
	// CheckpointSnapshot is a snapshot of a git workspace's tree, taken
	// before a run's first bash command.
	CheckpointSnapshot = "snapshot"
	// CheckpointEnd closes a run: the files it changed, each with its
	// state before the run and the state Loop left.
	CheckpointEnd = "end"
	// CheckpointRestore records the states a restore put files back to.
	// Loop no longer writes it: a restore is recorded as a run of its own
	// (CheckpointRecord.Restore), whose end holds those states. Logs that
	// have it read as before.
	CheckpointRestore = "restore"
	// CheckpointDropped says that the checkpoints of runs starting at or
	// before Start were dropped to stay within the size limit; Dropped
	// names those runs (a log written before it did has only Start).
	CheckpointDropped = "dropped"
)

// Where a FileState's content is kept.
const (
	ContentNone = ""    // not kept: the file is absent, or only its id counts (a state Loop left)
	ContentLog  = "log" // in the log, at Off
	ContentGit  = "git" // in the private git directory, by ID
)

// Git modes of the files a checkpoint knows.
const (
	ModeFile       uint32 = 0o100644
	ModeExecutable uint32 = 0o100755
	ModeSymlink    uint32 = 0o120000
)

// FileState is a workspace file's state as a checkpoint records it.
type FileState struct {
	Exists bool
	Mode   uint32 // ModeFile, ModeExecutable or ModeSymlink
	// ID is the content's git blob id in hex (SHA-1, or SHA-256 for a
	// snapshot of a SHA-256 repository).
	ID   string
	Size int64
	// Where the content is kept (ContentNone, ContentLog, ContentGit);
	// Off is its offset in the log when ContentLog.
	Where string
	Off   int64
}

// FileChange is one file a run changed: its state before the run and the
// state the run left.
type FileChange struct {
	Path      string // slash-separated, relative to the session's working directory
	Pre, Post FileState
}

// CheckpointRecord is one record of the log.
type CheckpointRecord struct {
	Kind  string // CheckpointPre, ...
	RunID string
	// Start is the history index the run's messages start at; End the
	// history's length when it ended (CheckpointEnd).
	Start, End int
	Path       string    // CheckpointPre
	State      FileState // CheckpointPre
	Tree       string    // CheckpointSnapshot: the tree's id
	// Files are CheckpointEnd's changes, and CheckpointRestore's states
	// (in Post).
	Files []FileChange
	// BashNotCovered: the run ran bash where no snapshot could be taken
	// (no git repository), so its changes are not known.
	BashNotCovered bool
	// Dropped are CheckpointDropped's runs: a restore is refused only
	// below those still of the session's history.
	Dropped []DroppedRun
	// Restore marks the records of a restore (CheckpointPre and
	// CheckpointEnd): not a run of the conversation but a restore made
	// when the history had Start messages, whose lines' checksum was
	// MessagesCRC. Its pre-images keep what the restore overwrote, so
	// that a session whose history starts with those messages (the
	// session itself, or the fork a rewind made of what it dropped) can
	// put them back.
	Restore     bool
	MessagesCRC uint32
	// Restores are, in a CheckpointDropped record, the restores whose
	// records were dropped: where each was made (Start and MessagesCRC
	// as above), so that a session whose history reaches that point
	// knows what it lost.
	Restores []RestorePoint
}

// DroppedRun is a run whose checkpoints were dropped to stay within the
// size limit: its id and the history index its messages started at.
type DroppedRun struct {
	RunID string
	Start int
}

// RestorePoint is where a restore was made: when the history had Start
// messages, whose lines' checksum was MessagesCRC.
type RestorePoint struct {
	Start       int
	MessagesCRC uint32
}

// FileCheckpoints is one session's checkpoint log. It is safe for
// concurrent use: its mutex is the log's write queue, held across the
// I/O of a write or a read, and a leaf (docs/lock-order.md).
type FileCheckpoints struct {
	s   *Session
	dir string

	mu     sync.Mutex
	opened bool             // size and ids are read
	tenure int              // the session's lock tenure they were read in
	size   int64            // the log's length: where the next record goes
	ids    map[string]int64 // content id -> offset of its bytes in the log
	buf    []byte
}

// FileCheckpoints returns the session's checkpoint log, nil for a session
// that is not on disk (in memory, or a draft not yet written).
func (s *Session) FileCheckpoints() *FileCheckpoints {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kind != onDisk {
		return nil
	}
	if s.ckpt == nil {
		s.ckpt = &FileCheckpoints{s: s, dir: fileCheckpointsOf(s.dir)}
	}
	return s.ckpt
}

// Dir is the session's file-checkpoints directory.
func (c *FileCheckpoints) Dir() string { return c.dir }

// openLocked opens the log for appending (the caller closes it),
// creating the directory and the file durably the first time, when it
// also reads what the log holds: the content ids and where the valid
// records end. A torn tail is cut off. The log is opened for each write
// and closed after it: a handle kept open would outlive the session's.
func (c *FileCheckpoints) openLocked() (fsys.File, error) {
	tenure, err := c.s.writableNow()
	if err != nil {
		return nil, err
	}
	fs := c.s.fs
	path := checkpointLog(c.dir)
	// What was read in an earlier tenure of the lock is stale: between
	// them the session was let go (letgo.go) and another process may
	// have appended to the log.
	if c.opened && c.tenure == tenure {
		f, err := fs.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return nil, fsys.PathError("open", path, err)
		}
		return f, nil
	}
	if err := fsys.EnsureDir(fs, c.dir); err != nil {
		return nil, fmt.Errorf("file checkpoints: %w", err)
	}
	f, err := fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fsys.PathError("open", path, err)
	}
	if err := fs.SyncDir(c.dir); err != nil {
		f.Close()
		return nil, fsys.PathError("fsync", c.dir, err)
	}
	ids := map[string]int64{}
	end, err := scanCheckpoints(f, func(r *CheckpointRecord) {
		if r.Kind == CheckpointPre && r.State.Where == ContentLog {
			ids[r.State.ID] = r.State.Off
		}
	})
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > end {
		if err := f.Truncate(end); err != nil {
			f.Close()
			return nil, fsys.PathError("truncate", path, err)
		}
	}
	c.opened, c.tenure, c.size, c.ids = true, tenure, end, ids
	return f, nil
}

// writableNow returns why the session's files cannot be written, or nil
// and the tenure of the lock this handle holds (LetGo ends one).
func (s *Session) writableNow() (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return 0, err
	}
	if s.kind != onDisk {
		return 0, fmt.Errorf("file checkpoints: session %s is not on disk", s.id)
	}
	return s.tenure, nil
}

// PreImage records, durably, the state of the file at path before run
// (whose messages start at start) first changes it; content is the file's
// bytes (nil when it does not exist). It returns the state as kept.
func (c *FileCheckpoints) PreImage(runID string, start int, path string, st FileState, content []byte) (FileState, error) {
	return c.preImage(CheckpointRecord{RunID: runID, Start: start, Path: path}, st, content)
}

// RestorePreImage records, durably, the state of the file at path before
// the restore restoreID, made when the history had start messages whose
// lines' checksum is crc, overwrites it (CheckpointRecord.Restore); as
// PreImage.
func (c *FileCheckpoints) RestorePreImage(restoreID string, start int, crc uint32, path string, st FileState, content []byte) (FileState, error) {
	return c.preImage(CheckpointRecord{RunID: restoreID, Start: start, Path: path, Restore: true, MessagesCRC: crc}, st, content)
}

func (c *FileCheckpoints) preImage(rec CheckpointRecord, st FileState, content []byte) (FileState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.openLocked()
	if err != nil {
		return FileState{}, err
	}
	defer f.Close()
	var inline []byte
	if st.Exists {
		st.Size = int64(len(content))
		if off, ok := c.ids[st.ID]; ok {
			st.Where, st.Off = ContentLog, off
		} else {
			inline = content
			st.Where = ContentLog
		}
	} else {
		st = FileState{}
	}
	rec.Kind, rec.State = CheckpointPre, st
	off, err := c.appendLocked(f, &rec, inline)
	if err != nil {
		return FileState{}, err
	}
	if inline != nil {
		st.Off = off
		c.ids[st.ID] = off
	}
	return st, nil
}

// Snapshot records, durably, the git tree a run's first bash command
// found.
func (c *FileCheckpoints) Snapshot(runID string, start int, tree string) error {
	return c.append(&CheckpointRecord{Kind: CheckpointSnapshot, RunID: runID, Start: start, Tree: tree})
}

// EndRun records what a run changed.
func (c *FileCheckpoints) EndRun(rec CheckpointRecord) error {
	rec.Kind = CheckpointEnd
	return c.append(&rec)
}

func (c *FileCheckpoints) append(rec *CheckpointRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.openLocked()
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = c.appendLocked(f, rec, nil)
	return err
}

// appendLocked writes rec (and inline content after it) at the log's end
// and fsyncs; it returns the offset of the content. A failed write is cut
// off again, so that the next record does not follow a torn one.
func (c *FileCheckpoints) appendLocked(f fsys.File, rec *CheckpointRecord, inline []byte) (int64, error) {
	w := recordJSON(rec)
	if inline != nil {
		w.Inline = int64(len(inline))
		w.CRC = fsys.CRC32C(0, inline)
	}
	line, err := json.Marshal(w)
	if err != nil {
		return 0, fmt.Errorf("file checkpoints: encode: %w", err)
	}
	c.buf = append(append(append(c.buf[:0], line...), '\n'), inline...)
	path := checkpointLog(c.dir)
	if _, err := f.WriteAt(c.buf, c.size); err != nil {
		f.Truncate(c.size)
		return 0, fsys.PathError("write", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Truncate(c.size)
		return 0, fsys.PathError("fsync", path, err)
	}
	contentAt := c.size + int64(len(line)) + 1
	c.size += int64(len(c.buf))
	if cap(c.buf) > 1<<20 {
		c.buf = nil
	}
	return contentAt, nil
}

// Records reads every record of the log, in order; a log that does not
// exist yet has none.
func (c *FileCheckpoints) Records() ([]CheckpointRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	path := checkpointLog(c.dir)
	f, err := c.s.fs.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsys.PathError("open", path, err)
	}
	defer f.Close()
	var out []CheckpointRecord
	_, err = scanCheckpoints(f, func(r *CheckpointRecord) { out = append(out, *r) })
	return out, err
}

// Content reads the content of a state kept in the log, checking its
// length.
func (c *FileCheckpoints) Content(st FileState) ([]byte, error) {
	if st.Where != ContentLog {
		return nil, fmt.Errorf("file checkpoints: content %s is not in the log", st.ID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	path := checkpointLog(c.dir)
	f, err := c.s.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fsys.PathError("open", path, err)
	}
	defer f.Close()
	b := make([]byte, st.Size)
	if _, err := f.ReadAt(b, st.Off); err != nil {
		return nil, fsys.PathError("read", path, fmt.Errorf("content of %s at %d: %w", st.ID, st.Off, err))
	}
	return b, nil
}

// Size is the log's length in bytes.
func (c *FileCheckpoints) Size() (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, err := c.s.fs.Stat(checkpointLog(c.dir))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Rewrite replaces the log with recs, led by a CheckpointDropped record of
// floor, the runs dropped and the restores dropped when floor >= 0: what
// stays once the oldest runs' checkpoints are dropped. Content kept in the
// log is copied to the new one; the replacement is atomic.
func (c *FileCheckpoints) Rewrite(recs []CheckpointRecord, floor int, dropped []DroppedRun, restores ...RestorePoint) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, err := c.openLocked()
	if err != nil {
		return err
	}
	defer old.Close()
	fs := c.s.fs
	path := checkpointLog(c.dir)
	var out bytes.Buffer
	moved := map[int64]int64{} // old content offset -> new
	add := func(r *CheckpointRecord, inline []byte) int64 {
		w := recordJSON(r)
		if inline != nil {
			w.Inline, w.CRC = int64(len(inline)), fsys.CRC32C(0, inline)
			w.State.Off = 0
		}
		line, _ := json.Marshal(w)
		out.Write(line)
		out.WriteByte('\n')
		at := int64(out.Len())
		out.Write(inline)
		return at
	}
	if floor >= 0 {
		add(&CheckpointRecord{Kind: CheckpointDropped, Start: floor, Dropped: dropped, Restores: restores}, nil)
	}
	fix := func(st *FileState) error {
		if st.Where != ContentLog {
			return nil
		}
		if off, ok := moved[st.Off]; ok {
			st.Off = off
			return nil
		}
		return fmt.Errorf("file checkpoints: content %s at %d is kept by no earlier record", st.ID, st.Off)
	}
	for i := range recs {
		r := recs[i]
		r.Files = append([]FileChange(nil), r.Files...)
		var inline []byte
		if r.Kind == CheckpointPre && r.State.Where == ContentLog {
			if _, ok := moved[r.State.Off]; !ok {
				inline = make([]byte, r.State.Size)
				if _, err := old.ReadAt(inline, r.State.Off); err != nil {
					return fsys.PathError("read", path, err)
				}
			} else if err := fix(&r.State); err != nil {
				return err
			}
		}
		for j := range r.Files {
			if err := errors.Join(fix(&r.Files[j].Pre), fix(&r.Files[j].Post)); err != nil {
				return err
			}
		}
		oldOff := r.State.Off
		at := add(&r, inline)
		if inline != nil {
			moved[oldOff] = at
		}
	}
	tf, tmp, err := fsys.CreateUnique(fs, path+".tmp-")
	if err != nil {
		return fsys.PathError("create", path, err)
	}
	if err := fsys.WriteSyncClose(tf, tmp, out.Bytes()); err != nil {
		fs.RemoveAll(tmp)
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		fs.RemoveAll(tmp)
		return fsys.PathError("rename", tmp, err)
	}
	// The next write reads the new log again.
	c.opened = false
	if err := fs.SyncDir(c.dir); err != nil {
		return fsys.PathError("fsync", c.dir, err)
	}
	return nil
}

// The log's JSON form of a record (docs/storage.md, "File checkpoints").
type checkpointLine struct {
	Type           string             `json:"type"`
	Run            string             `json:"run,omitempty"`
	Start          int                `json:"start"`
	End            int                `json:"end,omitempty"`
	Path           string             `json:"path,omitempty"`
	State          *fileStateLine     `json:"state,omitempty"`
	Tree           string             `json:"tree,omitempty"`
	Files          []fileChangeLine   `json:"files,omitempty"`
	BashNotCovered bool               `json:"bashNotCovered,omitempty"`
	Restore        bool               `json:"restore,omitempty"`
	MessagesCRC    uint32             `json:"messagesCrc32c,omitempty"`
	Restores       []restorePointLine `json:"restores,omitempty"`
	Runs           []droppedRunLine   `json:"runs,omitempty"`
	Inline         int64              `json:"inline,omitempty"`
	CRC            uint32             `json:"crc,omitempty"`
}

type restorePointLine struct {
	Start       int    `json:"start"`
	MessagesCRC uint32 `json:"messagesCrc32c"`
}

type fileStateLine struct {
	Exists bool   `json:"exists"`
	Mode   uint32 `json:"mode,omitempty"`
	ID     string `json:"id,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Where  string `json:"where,omitempty"`
	Off    int64  `json:"off,omitempty"`
}

type droppedRunLine struct {
	Run   string `json:"run"`
	Start int    `json:"start"`
}

type fileChangeLine struct {
	Path string        `json:"path"`
	Pre  fileStateLine `json:"pre"`
	Post fileStateLine `json:"post"`
}

func stateLine(s FileState) fileStateLine { return fileStateLine(s) }

func recordJSON(r *CheckpointRecord) checkpointLine {
	w := checkpointLine{Type: r.Kind, Run: r.RunID, Start: r.Start, End: r.End, Path: r.Path, Tree: r.Tree, BashNotCovered: r.BashNotCovered,
		Restore: r.Restore, MessagesCRC: r.MessagesCRC}
	if r.Kind == CheckpointPre {
		st := stateLine(r.State)
		w.State = &st
	}
	for _, p := range r.Restores {
		w.Restores = append(w.Restores, restorePointLine(p))
	}
	// A pre-image's own content follows its line: the reader knows where
	// (scanCheckpoints), so the line does not say.
	for _, f := range r.Files {
		w.Files = append(w.Files, fileChangeLine{Path: f.Path, Pre: stateLine(f.Pre), Post: stateLine(f.Post)})
	}
	for _, d := range r.Dropped {
		w.Runs = append(w.Runs, droppedRunLine{Run: d.RunID, Start: d.Start})
	}
	return w
}

func (w *checkpointLine) record() CheckpointRecord {
	r := CheckpointRecord{Kind: w.Type, RunID: w.Run, Start: w.Start, End: w.End, Path: w.Path, Tree: w.Tree, BashNotCovered: w.BashNotCovered,
		Restore: w.Restore, MessagesCRC: w.MessagesCRC}
	if w.State != nil {
		r.State = FileState(*w.State)
	}
	for _, f := range w.Files {
		r.Files = append(r.Files, FileChange{Path: f.Path, Pre: FileState(f.Pre), Post: FileState(f.Post)})
	}
	for _, d := range w.Runs {
		r.Dropped = append(r.Dropped, DroppedRun{RunID: d.Run, Start: d.Start})
	}
	for _, p := range w.Restores {
		r.Restores = append(r.Restores, RestorePoint(p))
	}
	return r
}

// scanCheckpoints reads the records of the log f from its start, calling
// fn for each valid one, and returns where the valid records end: the
// first line that is not whole, does not parse or whose content is short
// or fails its CRC ends the scan (a torn append).
func scanCheckpoints(f fsys.File, fn func(*CheckpointRecord)) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	r := io.NewSectionReader(f, 0, size)
	var off int64
	line := make([]byte, 0, 4096)
	chunk := make([]byte, 4096)
	for off < size {
		// Read one line.
		line = line[:0]
		pos := off
		found := false
		for !found && pos < size {
			n, err := r.ReadAt(chunk, pos)
			if n == 0 && err != nil {
				break
			}
			if i := bytes.IndexByte(chunk[:n], '\n'); i >= 0 {
				line = append(line, chunk[:i]...)
				found = true
			} else {
				line = append(line, chunk[:n]...)
				pos += int64(n)
			}
			if len(line) > 64<<20 {
				break
			}
		}
		if !found {
			return off, nil
		}
		var w checkpointLine
		if json.Unmarshal(line, &w) != nil || w.Type == "" {
			return off, nil
		}
		next := off + int64(len(line)) + 1
		if w.Inline > 0 {
			if next+w.Inline > size {
				return off, nil
			}
			crc, err := crcOf(r, 0, next, w.Inline)
			if err != nil || crc != w.CRC {
				return off, nil
			}
			next += w.Inline
		}
		rec := w.record()
		if w.Inline > 0 {
			rec.State.Off = off + int64(len(line)) + 1
		}
		fn(&rec)
		off = next
	}
	return off, nil
}

// crcOf continues crc over the n bytes of r at off, reading them a
// bounded buffer at a time.
func crcOf(r io.ReaderAt, crc uint32, off, n int64) (uint32, error) {
	buf := make([]byte, min(n, 256<<10))
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := r.ReadAt(buf[:k], off); err != nil {
			return 0, err
		}
		crc = fsys.CRC32C(crc, buf[:k])
		off += k
		n -= k
	}
	return crc, nil
}
