package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/loopdev/loop/internal/gitsnap"
	"github.com/loopdev/loop/internal/tools"
	"github.com/loopdev/loop/store"
)

// File checkpoints (docs/storage.md, "File checkpoints"; docs/protocol.md,
// session/restore_files and session/changes). Before a run first changes
// a file with write or edit, the file's state is recorded durably in the
// session's checkpoint log (store/filecheckpoints.go); before its first
// bash command in a git workspace, a snapshot of the working tree goes to
// a private git directory (internal/gitsnap). When the run ends, what it
// changed is recorded with the state Loop left, which a later restore
// compares the workspace against: a file changed since by someone else is
// a conflict. Outside git, bash's changes are not covered, and the run
// says so.

// runFiles is what a run has recorded of its changes so far. Only the
// run's goroutine touches it.
type runFiles struct {
	start int                        // the history index the run's messages start at
	pre   map[string]store.FileState // write and edit pre-images, by path relative to the cwd
	order []string                   // pre's paths, in the order recorded
	// beforeTree are the pre-images recorded before the snapshot: they,
	// not the snapshot, hold those files' state before the run.
	beforeTree map[string]bool
	tree       string // the snapshot before the run's first bash; "" if none
	repo       *gitsnap.Repo
	notCovered bool // bash ran where no snapshot could be taken
}

// DefaultCheckpointMaxBytes bounds a session's file checkpoints when
// config.json's checkpoints.maxBytes does not (docs/configuration.md).
const DefaultCheckpointMaxBytes = 512 << 20

// CheckpointsConfig is config.json's checkpoints object.
type CheckpointsConfig struct {
	// MaxBytes bounds one session's file checkpoints: past it, the oldest
	// runs' are dropped (0: DefaultCheckpointMaxBytes).
	MaxBytes int64 `json:"maxBytes,omitempty"`
}

func (c CheckpointsConfig) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return DefaultCheckpointMaxBytes
}

// bashNotCoveredNote is what a bash call's details say outside git.
const bashNotCoveredNote = "This workspace is not in a git repository: file checkpoints do not cover what bash changes, so session/restore_files cannot put those files back."

// realCwd is the session's working directory with symbolic links
// followed, which checkpoint paths are relative to.
func (s *Session) realCwd() string {
	if real, err := filepath.EvalSymlinks(s.cwd); err == nil {
		return real
	}
	return s.cwd
}

// gitRepo finds the git repository of the session's cwd once per
// session; nil when there is none.
func (s *Session) gitRepo(ctx context.Context) *gitsnap.Repo {
	s.mu.Lock()
	done, repo := s.gitLooked, s.git
	s.mu.Unlock()
	if done {
		return repo
	}
	repo, err := gitsnap.Find(ctx, s.cwd)
	if err != nil {
		s.e.log.Warn("file checkpoints: no git", "session", s.id, "err", err)
	}
	if ctx.Err() != nil {
		return repo
	}
	s.mu.Lock()
	s.gitLooked, s.git = true, repo
	s.mu.Unlock()
	return repo
}

// gitStore is the session's store of git snapshots, one for the
// session's life, so that its watcher (an inotify descriptor on Linux,
// internal/gitsnap/watch.go) lets a snapshot of an unchanged working
// tree skip git. The repository is found once per session; a store of
// another checkpoint directory (an ancestor's) is made for its call.
func (s *Session) gitStore(repo *gitsnap.Repo, ck *store.FileCheckpoints) *gitsnap.Store {
	own := s.st.FileCheckpoints()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snaps != nil && s.snaps.Repo == repo && s.snaps.GitDir == store.CheckpointGitDir(ck.Dir()) {
		return s.snaps
	}
	gs := &gitsnap.Store{Repo: repo, GitDir: store.CheckpointGitDir(ck.Dir()), Index: store.CheckpointGitIndex(ck.Dir())}
	if s.snaps != nil || s.snapsClosed || own == nil || own.Dir() != ck.Dir() {
		// Not the session's store (an ancestor's, whose blobs a fork's
		// restore reads): one without a watcher, which needs no closing.
		return gs
	}
	gs.Watch, gs.Watchers = true, s.e.watchers
	s.snaps = gs
	return gs
}

// maxGitWatchers bounds the watchers the sessions of one engine keep at
// once (gitsnap.Watchers): the sessions that snapshotted last keep
// theirs.
const maxGitWatchers = 8

// closeGitStore releases the watcher of the session's store of git
// snapshots, when the session closes; a snapshot after it runs git.
func (s *Session) closeGitStore() {
	s.mu.Lock()
	gs := s.snaps
	s.snapsClosed = true
	s.mu.Unlock()
	if gs != nil {
		if off := gs.WatchOff(); off != "" {
			s.e.log.Debug("file checkpoints: snapshots ran git every time", "session", s.id, "why", off)
		}
		gs.Close()
	}
}

// beforeTool records, durably, a tool call's start (journalStart) and its
// file checkpoint (checkpointBefore), the checkpoint on a goroutine of its
// own when the call has one: two fsyncs of different files issued
// together cost about one (the file system commits them in one journal
// transaction), so a write or edit's pre-image adds little to the start
// record's fsync it waits for anyway (BenchmarkPreImageBesideToolStart).
func (s *Session) beforeTool(ctx context.Context, runID string, rf *runFiles, name string, args json.RawMessage, env tools.Env, journalStart func() error) (note string, ckErr, jErr error) {
	if rf == nil || (name != tools.NameWrite && name != tools.NameEdit && name != tools.NameBash) {
		return "", nil, journalStart()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				ckErr = s.panicError("a file checkpoint", p)
			}
		}()
		note, ckErr = s.checkpointBefore(ctx, runID, rf, name, args, env)
	}()
	jErr = journalStart()
	<-done
	return note, ckErr, jErr
}

// checkpointBefore records what a tool call needs to be undone, before
// it runs: a write or edit's file, or, before the run's first bash, a
// snapshot of a git workspace. An error means the call must not run; a
// note is for the call's details.
func (s *Session) checkpointBefore(ctx context.Context, runID string, rf *runFiles, name string, args json.RawMessage, env tools.Env) (note string, err error) {
	if rf == nil {
		return "", nil
	}
	ck := s.st.FileCheckpoints()
	if ck == nil {
		return "", nil
	}
	switch name {
	case tools.NameWrite, tools.NameEdit:
		abs := tools.ChangedFile(name, args, env)
		if abs == "" {
			return "", nil // the call will refuse itself
		}
		rel, ok := relInside(s.realCwd(), abs)
		if !ok {
			return "This file is outside the session's working directory: file checkpoints do not cover it.", nil
		}
		if _, done := rf.pre[rel]; done {
			return "", nil
		}
		st, content, err := fileState(abs, "sha1")
		if err != nil {
			return "", fmt.Errorf("read %s for its checkpoint: %w", rel, err)
		}
		if st.Exists && st.Mode != store.ModeFile && st.Mode != store.ModeExecutable {
			return "", nil // a directory or a special file: the call will refuse it
		}
		if limit := s.e.catalog().config.Checkpoints.maxBytes(); int64(len(content)) > limit {
			return "", fmt.Errorf("%s is %d bytes, more than checkpoints.maxBytes (%d) allows a session's file checkpoints", rel, len(content), limit)
		}
		kept, err := ck.PreImage(runID, rf.start, rel, st, content)
		if err != nil {
			return "", err
		}
		if rf.pre == nil {
			rf.pre, rf.beforeTree = map[string]store.FileState{}, map[string]bool{}
		}
		rf.pre[rel] = kept
		rf.order = append(rf.order, rel)
		if rf.tree == "" {
			rf.beforeTree[rel] = true
		}
		return "", nil
	case tools.NameBash:
		if rf.tree != "" {
			return "", nil
		}
		repo := s.gitRepo(ctx)
		if repo == nil {
			rf.notCovered = true
			return bashNotCoveredNote, nil
		}
		tree, err := s.gitStore(repo, ck).Snapshot(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			// git itself refused (an unreadable file in the tree, a
			// damaged repository): bash still runs, and says plainly
			// that its changes are not covered. Loop's own storage
			// failing refuses the call instead (below).
			s.e.log.Warn("file checkpoints: no snapshot", "session", s.id, "err", err)
			rf.notCovered = true
			return "Loop could not snapshot this git workspace (" + err.Error() + "): file checkpoints do not cover what this run's bash commands change.", nil
		}
		if err := ck.Snapshot(runID, rf.start, tree); err != nil {
			return "", err
		}
		rf.tree, rf.repo = tree, repo
	}
	return "", nil
}

// checkpointEnd records what the run changed and the state it left, once
// it ends (end: the history's length), then keeps the checkpoints within
// their bound. A failure is logged: the run's result does not depend on
// it, and a later restore treats a run without its end as one a crash
// cut (closeRun).
func (s *Session) checkpointEnd(ctx context.Context, runID string, rf *runFiles, end int) {
	if rf == nil || (len(rf.pre) == 0 && rf.tree == "" && !rf.notCovered) {
		return
	}
	ck := s.st.FileCheckpoints()
	if ck == nil {
		return
	}
	// Not the run's context: a cancelled run still records what it did.
	ctx = context.WithoutCancel(ctx)
	rec, err := s.runChanges(ctx, ck, runID, rf, end)
	if err == nil {
		err = ck.EndRun(rec)
	}
	if err != nil {
		s.e.log.Warn("file checkpoints: run end not recorded", "session", s.id, "run", runID, "err", err)
		return
	}
	if err := s.boundCheckpoints(ctx, ck); err != nil {
		s.e.log.Warn("file checkpoints: not bounded", "session", s.id, "err", err)
	}
}

// runChanges resolves what run rf changed, comparing its recorded states
// with the workspace now.
func (s *Session) runChanges(ctx context.Context, ck *store.FileCheckpoints, runID string, rf *runFiles, end int) (store.CheckpointRecord, error) {
	rec := store.CheckpointRecord{RunID: runID, Start: rf.start, End: end, BashNotCovered: rf.notCovered}
	cwd := s.realCwd()
	byPath := map[string]store.FileChange{}
	if rf.tree != "" {
		repo := rf.repo
		if repo == nil {
			if repo = s.gitRepo(ctx); repo == nil {
				return rec, errors.New("the workspace is no longer in a git repository")
			}
		}
		gs := s.gitStore(repo, ck)
		post, err := gs.Snapshot(ctx)
		if err != nil {
			return rec, err
		}
		changes, err := gs.Diff(ctx, rf.tree, post)
		if err != nil {
			return rec, err
		}
		for _, c := range changes {
			rel, ok := relInside(cwd, filepath.Join(repo.Top, filepath.FromSlash(c.Path)))
			if !ok {
				rel = relOutside(cwd, filepath.Join(repo.Top, filepath.FromSlash(c.Path)))
			}
			if c.OldMode == 0o160000 || c.NewMode == 0o160000 {
				continue // a submodule: its own repository
			}
			fc := store.FileChange{Path: rel}
			if c.OldMode != 0 {
				fc.Pre = store.FileState{Exists: true, Mode: c.OldMode, ID: c.OldID, Where: store.ContentGit}
			}
			if c.NewMode != 0 {
				fc.Post = store.FileState{Exists: true, Mode: c.NewMode, ID: c.NewID}
			}
			byPath[rel] = fc
		}
	}
	for _, rel := range rf.order {
		pre := rf.pre[rel]
		fc, inTree := byPath[rel]
		switch {
		case inTree && rf.beforeTree[rel]:
			fc.Pre = pre // changed before the snapshot: the pre-image is the older state
		case inTree:
			continue // the snapshot holds the state before the run
		default:
			post, _, err := fileState(filepath.Join(cwd, filepath.FromSlash(rel)), "sha1")
			if err != nil {
				return rec, err
			}
			fc = store.FileChange{Path: rel, Pre: pre, Post: post}
		}
		byPath[rel] = fc
	}
	for _, fc := range byPath {
		if !sameState(fc.Pre, fc.Post) {
			rec.Files = append(rec.Files, fc)
		}
	}
	sort.Slice(rec.Files, func(i, j int) bool { return rec.Files[i].Path < rec.Files[j].Path })
	return rec, nil
}

// boundCheckpoints drops the oldest runs' checkpoints while the session's
// exceed checkpoints.maxBytes (docs/configuration.md).
func (s *Session) boundCheckpoints(ctx context.Context, ck *store.FileCheckpoints) error {
	limit := s.e.catalog().config.Checkpoints.maxBytes()
	for {
		size, err := checkpointBytes(ck)
		if err != nil || size <= limit {
			return err
		}
		recs, err := ck.Records()
		if err != nil {
			return err
		}
		floor := -1
		var dropped []store.DroppedRun
		var runs []string
		// The restores dropped, earlier and now: a session whose history
		// reaches where one was made must know it is gone
		// (readCheckpoints).
		var restores []store.RestorePoint
		for _, r := range recs {
			if r.Kind == store.CheckpointDropped {
				floor, dropped = r.Start, r.Dropped
				restores = append(restores, r.Restores...)
			}
			if r.RunID != "" && !slices.Contains(runs, r.RunID) {
				runs = append(runs, r.RunID)
			}
		}
		if len(runs) == 0 {
			return nil
		}
		drop := runs[0]
		var keep []store.CheckpointRecord
		var trees []string
		for _, r := range recs {
			switch {
			case r.Kind == store.CheckpointDropped:
			case r.RunID == drop:
				floor = max(floor, r.Start)
				if p := (store.RestorePoint{Start: r.Start, MessagesCRC: r.MessagesCRC}); r.Restore && !slices.Contains(restores, p) {
					restores = append(restores, p)
				}
				if !slices.ContainsFunc(dropped, func(d store.DroppedRun) bool { return d.RunID == drop }) {
					dropped = append(dropped, store.DroppedRun{RunID: drop, Start: r.Start})
				}
			default:
				if r.Kind == store.CheckpointRestore {
					// Only the ids count in a restore's states.
					for i := range r.Files {
						r.Files[i].Post.Where, r.Files[i].Post.Off = store.ContentNone, 0
						r.Files[i].Pre = store.FileState{}
					}
				}
				keep = append(keep, r)
				if r.Kind == store.CheckpointSnapshot {
					trees = append(trees, r.Tree)
				}
			}
		}
		if err := ck.Rewrite(keep, floor, dropped, restores...); err != nil {
			return err
		}
		if repo := s.gitRepo(ctx); repo != nil {
			if err := s.gitStore(repo, ck).Keep(ctx, trees); err != nil {
				return err
			}
		}
	}
}

// checkpointBytes is what a session's file checkpoints take on disk.
func checkpointBytes(ck *store.FileCheckpoints) (int64, error) {
	var n int64
	err := filepath.WalkDir(ck.Dir(), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}

// fileState reads the state of the file at abs (not following a final
// symbolic link), with its content; its id is in the object format
// format.
func fileState(abs, format string) (store.FileState, []byte, error) {
	fi, err := os.Lstat(abs)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return store.FileState{}, nil, nil
	}
	if err != nil {
		return store.FileState{}, nil, err
	}
	var content []byte
	st := store.FileState{Exists: true}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(abs)
		if err != nil {
			return store.FileState{}, nil, err
		}
		content, st.Mode = []byte(target), store.ModeSymlink
	case fi.Mode().IsRegular():
		if content, err = os.ReadFile(abs); err != nil {
			return store.FileState{}, nil, err
		}
		st.Mode = store.ModeFile
		if fi.Mode()&0o111 != 0 {
			st.Mode = store.ModeExecutable
		}
	case fi.IsDir():
		// No file here, as git sees it: a directory holds files of
		// its own paths.
		return store.FileState{}, nil, nil
	default:
		// A special file where a file was: never the same as a file's
		// state.
		st.Mode = uint32(fi.Mode().Type())
		return st, nil, nil
	}
	st.ID, st.Size = gitsnap.BlobID(format, content), int64(len(content))
	return st, content, nil
}

// sameState reports whether two states are the same file: both absent,
// or the same mode and content.
func sameState(a, b store.FileState) bool {
	if !a.Exists || !b.Exists {
		return a.Exists == b.Exists
	}
	return a.Mode == b.Mode && a.ID == b.ID
}

// relInside is abs relative to dir, slash-separated, when abs is inside
// dir.
func relInside(dir, abs string) (string, bool) {
	rel, err := filepath.Rel(dir, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// relOutside is abs relative to dir, "../" included: a git snapshot
// covers the whole repository, which may reach above the cwd.
func relOutside(dir, abs string) string {
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}
