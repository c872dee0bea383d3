package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/loopdev/loop/internal/gitsnap"
	"github.com/loopdev/loop/store"
)

// RestoreResult is what RestoreFiles did: the files it put back and the
// files changed outside Loop since Loop last left them (paths relative to
// the session's working directory, slash-separated, sorted). With
// conflicts and without force nothing is restored.
type RestoreResult struct {
	Restored  []string
	Conflicts []string
}

// RunChanges is one run's entry of Changes.
type RunChanges struct {
	RunID             string
	MessageStartIndex int
	MessageEndIndex   int
	Files             []ChangedFile
	// BashNotCovered: the run ran bash outside a git repository, so what
	// it changed there is not known, and not in Files.
	BashNotCovered bool
}

// ChangedFile is a file a run changed.
type ChangedFile struct {
	Path   string // relative to the session's working directory, slash-separated
	Change string // FileAdded, FileModified or FileDeleted
}

// Kinds of ChangedFile.Change.
const (
	FileAdded    = "added"
	FileModified = "modified"
	FileDeleted  = "deleted"
)

// checkpointRun is one run as the checkpoint log tells it.
type checkpointRun struct {
	rec   store.CheckpointRecord // its end record (computed for a run a crash cut)
	ended bool
}

// checkpointView is the checkpoint log read: the runs in order, the state
// Loop last left each file in, and the floor below which runs were
// dropped.
type checkpointView struct {
	runs     []checkpointRun
	baseline map[string]store.FileState
	floor    int // -1 when none were dropped
}

// readCheckpoints reads the session's checkpoint log. A run without its
// end record (a crash cut it) is resolved against the workspace now, and,
// when persist, its end is recorded so that later reads agree.
func (s *Session) readCheckpoints(ctx context.Context, ck *store.FileCheckpoints, persist bool) (*checkpointView, error) {
	recs, err := ck.Records()
	if err != nil {
		return nil, storageError(err, "read the file checkpoints")
	}
	v := &checkpointView{baseline: map[string]store.FileState{}, floor: -1}
	var dropped []store.DroppedRun
	open := map[string]*runFiles{}
	var order []string
	s.mu.Lock()
	end := len(s.history)
	s.mu.Unlock()
	closeRun := func(id string) error {
		rf := open[id]
		delete(open, id)
		rec, err := s.runChanges(ctx, ck, id, rf, end)
		if err != nil {
			return fmt.Errorf("resolve run %s that a crash cut: %w", id, err)
		}
		if persist {
			rec.Kind = store.CheckpointEnd
			if err := ck.EndRun(rec); err != nil {
				return storageError(err, "record the end of a run a crash cut")
			}
		}
		v.add(rec, true)
		return nil
	}
	for _, r := range recs {
		switch r.Kind {
		case store.CheckpointDropped:
			if len(r.Dropped) == 0 {
				// A log from before dropped records named their runs.
				v.floor = max(v.floor, r.Start)
			}
			dropped = append(dropped, r.Dropped...)
		case store.CheckpointPre, store.CheckpointSnapshot:
			rf := open[r.RunID]
			if rf == nil {
				rf = &runFiles{start: r.Start}
				open[r.RunID] = rf
				order = append(order, r.RunID)
			}
			if r.Kind == store.CheckpointSnapshot {
				rf.tree = r.Tree
				break
			}
			if rf.pre == nil {
				rf.pre, rf.beforeTree = map[string]store.FileState{}, map[string]bool{}
			}
			if _, ok := rf.pre[r.Path]; !ok {
				rf.pre[r.Path] = r.State
				rf.order = append(rf.order, r.Path)
				if rf.tree == "" {
					rf.beforeTree[r.Path] = true
				}
			}
		case store.CheckpointEnd:
			delete(open, r.RunID)
			v.add(r, true)
		case store.CheckpointRestore:
			for _, f := range r.Files {
				v.baseline[f.Path] = f.Post
			}
		}
	}
	for _, id := range order {
		if open[id] != nil {
			if err := closeRun(id); err != nil {
				return nil, err
			}
		}
	}
	// The runs a rewind dropped stay in the log (their post-states are
	// still what Loop last left the files in: the baseline above), but
	// they are no longer the session's: new runs start at their message
	// indexes, and restoring to one of those must use the new run's
	// checkpoint, not the dropped one's.
	live := map[string]bool{}
	for _, t := range s.st.Timings() {
		live[t.ID] = true
	}
	v.runs = slices.DeleteFunc(v.runs, func(r checkpointRun) bool { return !live[r.rec.RunID] })
	// Likewise a dropped run refuses restores below it only while it is
	// one of the history's: a run a rewind dropped is never restored to.
	for _, d := range dropped {
		if live[d.RunID] {
			v.floor = max(v.floor, d.Start)
		}
	}
	return v, nil
}

func (v *checkpointView) add(rec store.CheckpointRecord, ended bool) {
	v.runs = append(v.runs, checkpointRun{rec: rec, ended: ended})
	for _, f := range rec.Files {
		v.baseline[f.Path] = f.Post
	}
}

// RestoreFiles puts the workspace's files back to their state at
// messageCount: the state before the first run that started at or after
// it (docs/protocol.md, session/restore_files). A file changed outside
// Loop since Loop last left it is a conflict: then nothing changes unless
// force. An idle command.
func (s *Session) RestoreFiles(ctx context.Context, messageCount int, force bool) (res RestoreResult, err error) {
	c, err := s.beginCommand(OpRestoreFiles, kindSavedCommand)
	if err != nil {
		return RestoreResult{}, err
	}
	defer s.settleCommand(c.release, &err)
	defer c.release()
	res, err = s.restoreFiles(ctx, messageCount, force)
	if res.Restored == nil {
		res.Restored = []string{}
	}
	if res.Conflicts == nil {
		res.Conflicts = []string{}
	}
	return res, err
}

func (s *Session) restoreFiles(ctx context.Context, messageCount int, force bool) (RestoreResult, error) {
	s.mu.Lock()
	n := len(s.history)
	s.mu.Unlock()
	if messageCount < 0 || messageCount > n {
		return RestoreResult{}, errorf(CodeInvalidParams, "messageCount %d is out of range: the session has %d messages", messageCount, n)
	}
	cwd := s.realCwd()
	if err := checkWorkspace(cwd); err != nil {
		return RestoreResult{}, err
	}
	ck := s.st.FileCheckpoints()
	if ck == nil {
		return RestoreResult{}, nil
	}
	v, err := s.readCheckpoints(ctx, ck, true)
	if err != nil {
		return RestoreResult{}, err
	}
	first := -1
	for i, r := range v.runs {
		if r.rec.Start >= messageCount {
			first = i
			break
		}
	}
	if v.floor >= messageCount {
		return RestoreResult{}, errorf(CodeInvalidParams, "the file checkpoints of runs up to message %d were dropped to stay within checkpoints.maxBytes: the files cannot be put back to message %d", v.floor, messageCount)
	}
	if first < 0 {
		return RestoreResult{}, nil
	}
	// The state to put back: each file's state before the first of these
	// runs that changed it.
	target := map[string]store.FileState{}
	for _, r := range v.runs[first:] {
		for _, f := range r.rec.Files {
			if _, ok := target[f.Path]; !ok {
				target[f.Path] = f.Pre
			}
		}
	}
	paths := make([]string, 0, len(target))
	for p := range target {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var res RestoreResult
	var todo []string
	for _, p := range paths {
		base := v.baseline[p]
		format := "sha1"
		if base.ID != "" {
			format = gitsnap.FormatOf(base.ID)
		}
		now, _, err := fileState(filepath.Join(cwd, filepath.FromSlash(p)), format)
		if err != nil {
			return RestoreResult{}, wrapError(CodeStorageError, err, "read %s", p)
		}
		if !sameState(now, base) {
			res.Conflicts = append(res.Conflicts, p)
		}
		if !sameState(now, target[p]) {
			todo = append(todo, p)
		}
	}
	if len(res.Conflicts) > 0 && !force {
		return res, nil
	}
	contents, err := s.restoreContents(ctx, ck, target, todo)
	if err != nil {
		return res, err
	}
	// Removals first, deepest first, so that a file put back where a
	// run left a directory finds the directory emptied.
	sort.SliceStable(todo, func(i, j int) bool {
		ri, rj := !target[todo[i]].Exists, !target[todo[j]].Exists
		if ri != rj {
			return ri
		}
		if ri {
			return todo[i] > todo[j]
		}
		return todo[i] < todo[j]
	})
	var done []store.FileChange
	for _, p := range todo {
		t := target[p]
		if err := putFile(cwd, filepath.Join(cwd, filepath.FromSlash(p)), t, contents[p]); err != nil {
			// What was put back is recorded, so that a later restore
			// does not call it a conflict.
			if rerr := ck.Restored(done); rerr != nil {
				s.e.log.Warn("file checkpoints: restore not recorded", "session", s.id, "err", rerr)
			}
			return res, wrapError(CodeStorageError, err, "restore %s (restored before it: %d files)", p, len(res.Restored))
		}
		res.Restored = append(res.Restored, p)
		t.Where, t.Off = store.ContentNone, 0
		done = append(done, store.FileChange{Path: p, Post: t})
	}
	sort.Strings(res.Restored)
	if len(done) > 0 {
		if err := ck.Restored(done); err != nil {
			return res, storageError(err, "record the restore")
		}
	}
	return res, nil
}

// restoreContents reads the content of each target state of paths that
// exists, all before any file changes.
func (s *Session) restoreContents(ctx context.Context, ck *store.FileCheckpoints, target map[string]store.FileState, paths []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	var ids []string
	for _, p := range paths {
		t := target[p]
		switch {
		case !t.Exists:
		case t.Where == store.ContentLog:
			b, err := ck.Content(t)
			if err != nil {
				return nil, storageError(err, "read a file checkpoint")
			}
			out[p] = b
		case t.Where == store.ContentGit:
			ids = append(ids, t.ID)
		default:
			return nil, errorf(CodeStorageError, "the checkpoint of %s holds no content", p)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	repo := s.gitRepo(ctx)
	if repo == nil {
		return nil, errorf(CodeStorageError, "the workspace is no longer in a git repository: its bash snapshots cannot be read")
	}
	blobs, err := s.gitStore(repo, ck).Blobs(ctx, ids)
	if err != nil {
		return nil, wrapError(CodeStorageError, err, "read the git snapshot")
	}
	for _, p := range paths {
		if t := target[p]; t.Exists && t.Where == store.ContentGit {
			out[p] = blobs[t.ID]
		}
	}
	return out, nil
}

// checkWorkspace refuses a working directory that is gone or cannot be
// written, before anything changes.
func checkWorkspace(cwd string) error {
	fi, err := os.Stat(cwd)
	if err != nil || !fi.IsDir() {
		return errorf(CodeStorageError, "the session's working directory %s is gone: nothing was restored", cwd)
	}
	f, err := os.CreateTemp(cwd, ".loop-restore-check-*")
	if err != nil {
		return wrapError(CodeStorageError, err, "the session's working directory %s cannot be written: nothing was restored", cwd)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// putFile makes the file at abs (under root, the working directory) what
// st says, with content: removed when st is absent (with the directories
// that removal leaves empty), else written atomically (a temporary file renamed over
// it) with st's mode, or made the symbolic link st holds.
func putFile(root, abs string, st store.FileState, content []byte) error {
	if !st.Exists {
		err := os.Remove(abs)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		// The directories the run made for it go too, once empty (git
		// keeps no empty directory either); the working directory stays.
		for dir := filepath.Dir(abs); dir != root && strings.HasPrefix(dir, root+string(filepath.Separator)); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	if st.Mode == store.ModeSymlink {
		if err := os.Remove(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return os.Symlink(string(content), abs)
	}
	mode := fs.FileMode(0o644)
	if st.Mode == store.ModeExecutable {
		mode = 0o755
	}
	tmp, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".loop-restore-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if fi, err := os.Lstat(abs); err == nil && fi.IsDir() {
		// A run made a directory where the file was; its files were
		// removed first (restoreFiles), so it is empty unless someone
		// else put files there.
		if err := os.Remove(abs); err != nil {
			return fmt.Errorf("%s is a directory now, and not empty", abs)
		}
	}
	return os.Rename(tmp.Name(), abs)
}

// Changes lists the files each run changed, oldest run first
// (docs/protocol.md, session/changes). An idle command.
func (s *Session) Changes(ctx context.Context) (runs []RunChanges, err error) {
	c, err := s.beginCommand(OpChanges, kindSavedCommand)
	if err != nil {
		return nil, err
	}
	defer s.settleCommand(c.release, &err)
	defer c.release()
	runs = []RunChanges{}
	ck := s.st.FileCheckpoints()
	if ck == nil {
		return runs, nil
	}
	v, err := s.readCheckpoints(ctx, ck, false)
	if err != nil {
		return nil, err
	}
	for _, r := range v.runs {
		rc := RunChanges{RunID: r.rec.RunID, MessageStartIndex: r.rec.Start, MessageEndIndex: r.rec.End, Files: []ChangedFile{}, BashNotCovered: r.rec.BashNotCovered}
		for _, f := range r.rec.Files {
			change := FileModified
			switch {
			case !f.Pre.Exists:
				change = FileAdded
			case !f.Post.Exists:
				change = FileDeleted
			}
			rc.Files = append(rc.Files, ChangedFile{Path: f.Path, Change: change})
		}
		runs = append(runs, rc)
	}
	return runs, nil
}
