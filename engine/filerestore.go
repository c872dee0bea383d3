package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// checkpointRun is one run as the checkpoint logs tell it, or a restore
// (rec.Restore), which counts as a run at the point of the history it was
// made at.
type checkpointRun struct {
	rec   store.CheckpointRecord // its end record (computed for a run a crash cut)
	ended bool
	// src is the log that holds its content, and whose directory holds
	// its git snapshots: the session's own, or an ancestor's.
	src *store.FileCheckpoints
}

// located is a file state and the log that holds its content.
type located struct {
	st  store.FileState
	src *store.FileCheckpoints
}

// checkpointView is the checkpoint logs read: the runs of the session's
// history in order, the state Loop last left each file in, and the floor
// below which runs' checkpoints are gone.
type checkpointView struct {
	runs     []checkpointRun
	baseline map[string]store.FileState
	floor    int    // -1 when none are gone
	floorWhy string // why they are gone
}

// raise moves the floor up to start, for why.
func (v *checkpointView) raise(start int, why string) {
	if start > v.floor {
		v.floor, v.floorWhy = start, why
	}
}

// Why a view's floor is where it is.
const (
	floorBound = "were dropped to stay within checkpoints.maxBytes"
	floorCut   = "were dropped: a crash cut the run in the session that holds them"
)

// readCheckpoints reads the file checkpoints of the session's history: its
// ancestors' logs (a fork's history starts with theirs, and so do their
// runs' checkpoints: store.Session.AncestorCheckpoints), oldest first,
// then its own, ck. The runs of the history are those whose id is among
// its prompt timings, and the restores made at a point of it (restoreLive).
// A run of its own log without its end record (a crash cut it) is
// resolved against the workspace now, and, when persist, its end is
// recorded so that later reads agree; one of an ancestor's log counts as
// dropped (resolving it would write the ancestor's snapshots). The runs
// of an ancestor that is gone count as dropped too.
func (s *Session) readCheckpoints(ctx context.Context, ck *store.FileCheckpoints, persist bool) (*checkpointView, error) {
	ancestors, err := s.st.AncestorCheckpoints()
	if err != nil {
		return nil, storageError(err, "find the file checkpoints of the session's ancestors")
	}
	v := &checkpointView{baseline: map[string]store.FileState{}, floor: -1}
	s.mu.Lock()
	end := len(s.history)
	s.mu.Unlock()
	var all []checkpointRun
	var dropped []store.RestorePoint // the restores the logs dropped
	seen := map[string]bool{}        // the run ids the logs hold
	gone := ""
	ancestorFloor := -1 // the highest floor of the ancestors' logs
	for _, a := range ancestors {
		if a.Log == nil {
			gone = a.SessionID
			continue
		}
		if all, err = s.readLog(ctx, v, a.Log, &ancestorFloor, false, end, seen, &dropped, nil, all); err != nil {
			return nil, err
		}
	}
	var runsDropped []store.DroppedRun // the runs the session's own log dropped
	if all, err = s.readLog(ctx, v, ck, nil, persist, end, seen, &dropped, &runsDropped, all); err != nil {
		return nil, err
	}
	// The runs a rewind dropped stay in the log (their post-states are
	// still what Loop last left the files in: the baseline above), but
	// they are no longer the session's: new runs start at their message
	// indexes, and restoring to one of those must use the new run's
	// checkpoint, not the dropped one's. An ancestor's runs past the
	// fork's part are not the fork's either.
	//
	// What an ancestor's log dropped, or what went with an ancestor that
	// is gone, can only be runs of the history no log names: a run that
	// changed nothing cannot be told apart from them, so those count.
	// Runs of the ancestor past the fork's part do not. A dropped
	// restore is named by where it was made (dropped below).
	live := map[string]bool{}
	unnamed := -1 // where the last run no log names starts
	for _, t := range s.st.Timings() {
		live[t.ID] = true
		if !seen[t.ID] && t.MessageStartIndex.Set {
			unnamed = max(unnamed, t.MessageStartIndex.Value)
		}
	}
	v.raise(min(ancestorFloor, unnamed), floorBound)
	// A run the session's own log dropped refuses restores below it only
	// while it is one of the history's: a run a rewind dropped is never
	// restored to.
	for _, d := range runsDropped {
		if live[d.RunID] {
			v.raise(d.Start, floorBound)
		}
	}
	if gone != "" {
		v.raise(unnamed, "were dropped with session "+gone+", which this session's history comes from and which was deleted")
	}
	crcs := map[int]uint32{}
	for _, p := range dropped {
		ok, err := s.restoreLive(store.CheckpointRecord{Start: p.Start, MessagesCRC: p.MessagesCRC}, end, crcs)
		if err != nil {
			return nil, err
		}
		if ok {
			v.raise(p.Start, floorBound)
		}
	}
	for _, r := range all {
		ok := live[r.rec.RunID]
		if r.rec.Restore {
			if ok, err = s.restoreLive(r.rec, end, crcs); err != nil {
				return nil, err
			}
		}
		switch {
		case !ok:
		case !r.ended:
			v.raise(r.rec.Start, floorCut)
		default:
			v.runs = append(v.runs, r)
		}
	}
	sort.SliceStable(v.runs, func(i, j int) bool { return v.runs[i].rec.Start < v.runs[j].rec.Start })
	return v, nil
}

// restoreLive reports whether the restore rec was made at a point of the
// session's history (end messages long): its first rec.Start messages are
// those the history had then (their checksum). So a restore counts in the
// session that made it while the history still starts that way, and in
// the fork a rewind made of what it dropped, whose history is the whole
// history before the rewind; not in the session the rewind cut.
func (s *Session) restoreLive(rec store.CheckpointRecord, end int, crcs map[int]uint32) (bool, error) {
	if rec.Start > end {
		return false, nil
	}
	crc, ok := crcs[rec.Start]
	if !ok {
		var err error
		crc, err = s.st.MessagesCRCAt(rec.Start)
		if errors.Is(err, store.ErrInvalid) {
			return false, nil
		}
		if err != nil {
			return false, storageError(err, "read the history's checksum")
		}
		crcs[rec.Start] = crc
	}
	return crc == rec.MessagesCRC, nil
}

// readLog reads one checkpoint log into v's baseline and appends its runs,
// live or not, to all, the restores it dropped to dropped, and (its own
// log) the runs it dropped to runsDropped. ancestorFloor is nil for the session's own log,
// whose floor is v's and whose runs a crash cut are resolved (and, when
// persist, their ends recorded); for an ancestor's log it gets the log's
// floor, and its runs a crash cut are left unended.
func (s *Session) readLog(ctx context.Context, v *checkpointView, ck *store.FileCheckpoints, ancestorFloor *int, persist bool, end int, seen map[string]bool, dropped *[]store.RestorePoint, runsDropped *[]store.DroppedRun, all []checkpointRun) ([]checkpointRun, error) {
	own := ancestorFloor == nil
	recs, err := ck.Records()
	if err != nil {
		return all, storageError(err, "read the file checkpoints")
	}
	open := map[string]*runFiles{}
	first := map[string]store.CheckpointRecord{}
	var order []string
	add := func(rec store.CheckpointRecord) {
		all = append(all, checkpointRun{rec: rec, ended: true, src: ck})
		for _, f := range rec.Files {
			v.baseline[f.Path] = f.Post
		}
	}
	for _, r := range recs {
		if r.RunID != "" {
			seen[r.RunID] = true
		}
		switch r.Kind {
		case store.CheckpointDropped:
			*dropped = append(*dropped, r.Restores...)
			if own {
				if len(r.Dropped) == 0 {
					// A log from before dropped records named their runs.
					v.raise(r.Start, floorBound)
				}
				*runsDropped = append(*runsDropped, r.Dropped...)
			} else {
				*ancestorFloor = max(*ancestorFloor, r.Start)
			}
		case store.CheckpointPre, store.CheckpointSnapshot:
			rf := open[r.RunID]
			if rf == nil {
				rf = &runFiles{start: r.Start}
				open[r.RunID] = rf
				first[r.RunID] = r
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
			add(r)
		case store.CheckpointRestore:
			for _, f := range r.Files {
				v.baseline[f.Path] = f.Post
			}
		}
	}
	for _, id := range order {
		rf := open[id]
		if rf == nil {
			continue
		}
		head := first[id]
		if !own {
			all = append(all, checkpointRun{rec: store.CheckpointRecord{Kind: store.CheckpointEnd, RunID: id, Start: rf.start, Restore: head.Restore, MessagesCRC: head.MessagesCRC}, src: ck})
			continue
		}
		runEnd := end
		if head.Restore {
			runEnd = rf.start // a restore is a point of the history
		}
		rec, err := s.runChanges(ctx, ck, id, rf, runEnd)
		if err != nil {
			return all, fmt.Errorf("resolve run %s that a crash cut: %w", id, err)
		}
		rec.Kind, rec.Restore, rec.MessagesCRC = store.CheckpointEnd, head.Restore, head.MessagesCRC
		if persist {
			if err := ck.EndRun(rec); err != nil {
				return all, storageError(err, "record the end of a run a crash cut")
			}
		}
		add(rec)
	}
	return all, nil
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
	if v.floor >= messageCount {
		return RestoreResult{}, errorf(CodeInvalidParams, "the file checkpoints of runs up to message %d %s: the files cannot be put back to message %d", v.floor, v.floorWhy, messageCount)
	}
	// The state to put back: each file's state before the first of the
	// runs starting at or after messageCount that changed it (a restore
	// made there counts as one: what it overwrote is that state).
	target := map[string]located{}
	for _, r := range v.runs {
		if r.rec.Start < messageCount {
			continue
		}
		for _, f := range r.rec.Files {
			if _, ok := target[f.Path]; !ok {
				target[f.Path] = located{f.Pre, r.src}
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
	now := map[string]store.FileState{}
	nowContent := map[string][]byte{}
	for _, p := range paths {
		base := v.baseline[p]
		format := "sha1"
		if base.ID != "" {
			format = gitsnap.FormatOf(base.ID)
		}
		st, content, err := fileState(filepath.Join(cwd, filepath.FromSlash(p)), format)
		if err != nil {
			return RestoreResult{}, wrapError(CodeStorageError, err, "read %s", p)
		}
		if !sameState(st, base) {
			res.Conflicts = append(res.Conflicts, p)
		}
		if !sameState(st, target[p].st) {
			todo = append(todo, p)
			now[p], nowContent[p] = st, content
		}
	}
	if len(res.Conflicts) > 0 && !force {
		return res, nil
	}
	if len(todo) == 0 {
		return res, nil
	}
	contents, err := s.restoreContents(ctx, target, todo)
	if err != nil {
		return res, err
	}
	// What the restore overwrites is kept first, durably, as the
	// pre-images of a run of its own at the history's end: a restore to
	// this point (here, or on the fork a rewind makes of what it drops)
	// puts it back. A crash from here on leaves that restore a run
	// without its end, resolved against the workspace when next read.
	crc, err := s.st.MessagesCRCAt(n)
	if err != nil {
		return res, storageError(err, "read the history's checksum (nothing was restored)")
	}
	rid := newID()
	pre := map[string]store.FileState{}
	for _, p := range todo {
		st, content := now[p], nowContent[p]
		if st.Exists && st.Mode != store.ModeFile && st.Mode != store.ModeExecutable && st.Mode != store.ModeSymlink {
			st, content = store.FileState{}, nil // a special file: nothing Loop can put back
		}
		kept, err := ck.RestorePreImage(rid, n, crc, p, st, content)
		if err != nil {
			return res, storageError(err, "keep what the restore overwrites (nothing was restored)")
		}
		pre[p] = kept
	}
	// Removals first, deepest first, so that a file put back where a
	// run left a directory finds the directory emptied.
	sort.SliceStable(todo, func(i, j int) bool {
		ri, rj := !target[todo[i]].st.Exists, !target[todo[j]].st.Exists
		if ri != rj {
			return ri
		}
		if ri {
			return todo[i] > todo[j]
		}
		return todo[i] < todo[j]
	})
	rec := store.CheckpointRecord{RunID: rid, Start: n, End: n, Restore: true, MessagesCRC: crc}
	for _, p := range todo {
		t := target[p].st
		if err := putFile(cwd, filepath.Join(cwd, filepath.FromSlash(p)), t, contents[p]); err != nil {
			// What was put back is recorded, so that a later restore
			// does not call it a conflict.
			if rerr := ck.EndRun(rec); rerr != nil {
				s.e.log.Warn("file checkpoints: restore not recorded", "session", s.id, "err", rerr)
			}
			return res, wrapError(CodeStorageError, err, "restore %s (restored before it: %d files)", p, len(res.Restored))
		}
		res.Restored = append(res.Restored, p)
		t.Where, t.Off = store.ContentNone, 0
		rec.Files = append(rec.Files, store.FileChange{Path: p, Pre: pre[p], Post: t})
	}
	sort.Strings(res.Restored)
	sort.Slice(rec.Files, func(i, j int) bool { return rec.Files[i].Path < rec.Files[j].Path })
	if err := ck.EndRun(rec); err != nil {
		return res, storageError(err, "record the restore")
	}
	if err := s.boundCheckpoints(ctx, ck); err != nil {
		s.e.log.Warn("file checkpoints: not bounded", "session", s.id, "err", err)
	}
	return res, nil
}

// restoreContents reads the content of each target state of paths that
// exists, all before any file changes, each from the log (or git
// directory) that holds it.
func (s *Session) restoreContents(ctx context.Context, target map[string]located, paths []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	bySrc := map[*store.FileCheckpoints][]string{}
	var srcs []*store.FileCheckpoints
	for _, p := range paths {
		t := target[p]
		switch {
		case !t.st.Exists:
		case t.st.Where == store.ContentLog:
			b, err := t.src.Content(t.st)
			if err != nil {
				return nil, storageError(err, "read a file checkpoint")
			}
			// An ancestor may have rewritten its log (the bound) since
			// it was read: the content must be the one named.
			if gitsnap.BlobID(gitsnap.FormatOf(t.st.ID), b) != t.st.ID {
				return nil, errorf(CodeStorageError, "the checkpoint of %s changed while it was read: try again", p)
			}
			out[p] = b
		case t.st.Where == store.ContentGit:
			if _, ok := bySrc[t.src]; !ok {
				srcs = append(srcs, t.src)
			}
			bySrc[t.src] = append(bySrc[t.src], t.st.ID)
		default:
			return nil, errorf(CodeStorageError, "the checkpoint of %s holds no content", p)
		}
	}
	if len(srcs) == 0 {
		return out, nil
	}
	repo := s.gitRepo(ctx)
	if repo == nil {
		return nil, errorf(CodeStorageError, "the workspace is no longer in a git repository: its bash snapshots cannot be read")
	}
	blobs := map[string][]byte{}
	for _, src := range srcs {
		if _, err := os.Stat(filepath.Join(store.CheckpointGitDir(src.Dir()), "HEAD")); err != nil {
			return nil, wrapError(CodeStorageError, err, "read the git snapshot")
		}
		got, err := s.gitStore(repo, src).Blobs(ctx, bySrc[src])
		if err != nil {
			return nil, wrapError(CodeStorageError, err, "read the git snapshot")
		}
		for id, b := range got {
			blobs[id] = b
		}
	}
	for _, p := range paths {
		if t := target[p]; t.st.Exists && t.st.Where == store.ContentGit {
			out[p] = blobs[t.st.ID]
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
	s.mu.Lock()
	n := len(s.history)
	s.mu.Unlock()
	for _, r := range v.runs {
		if r.rec.Restore {
			continue // a restore, not a run of the conversation
		}
		// A run of an ancestor that runs past the fork's point ends
		// there in the fork's history, as its prompt timing does.
		rc := RunChanges{RunID: r.rec.RunID, MessageStartIndex: r.rec.Start, MessageEndIndex: min(r.rec.End, n), Files: []ChangedFile{}, BashNotCovered: r.rec.BashNotCovered}
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
