// Package gitsnap takes snapshots of a git workspace's working tree into a
// private git directory, without touching the workspace's repository: its
// index, HEAD, branches, refs and stash are only ever read (the index is
// copied once, to start the private index warm). The snapshots are trees,
// the tracked and untracked files git would add (the repository's
// .gitignore files, info/exclude and the user's global excludes are
// honoured), byte for byte: no filter, end-of-line conversion or
// working-tree encoding applies (the private info/attributes unsets them).
// The private directory borrows the repository's objects
// (objects/info/alternates), so a file the repository already holds costs
// nothing. docs/storage.md, "File checkpoints", describes the layout; the
// engine (engine/filecheckpoint.go) decides when to take one.
package gitsnap

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Repo is the git repository a workspace is in.
type Repo struct {
	Top     string // the working tree's top directory (absolute, symlinks resolved)
	Objects string // the repository's object directory
	Exclude string // its info/exclude
	Index   string // its index file (read, never written)
	Format  string // object format: "sha1" or "sha256"
}

// ErrNoGit is Find's error when git cannot be run.
var ErrNoGit = errors.New("git is not installed")

// Find returns the repository cwd is in, nil when it is in none (or in a
// repository without a working tree).
func Find(ctx context.Context, cwd string) (*Repo, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, ErrNoGit
	}
	cmd := exec.CommandContext(ctx, "git", "rev-parse", "--path-format=absolute",
		"--show-toplevel", "--git-common-dir", "--git-path", "info/exclude", "--git-path", "index", "--show-object-format")
	cmd.Dir = cwd
	cmd.Env = baseEnv()
	out, err := cmd.Output()
	if err != nil {
		// Not a repository, or a bare one: nothing to snapshot.
		return nil, nil
	}
	f := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(f) != 5 || f[0] == "" {
		return nil, nil
	}
	top, err := filepath.EvalSymlinks(f[0])
	if err != nil {
		return nil, fmt.Errorf("git working tree %s: %w", f[0], err)
	}
	return &Repo{Top: top, Objects: filepath.Join(f[1], "objects"), Exclude: f[2], Index: f[3], Format: f[4]}, nil
}

// Store is a private git directory and index that hold snapshots of one
// repository's working tree.
type Store struct {
	Repo   *Repo
	GitDir string // the private git directory
	Index  string // its index file
	// Watch keeps a watcher on the working tree (watch.go; Linux only)
	// from the first snapshot on, so that a snapshot with no change since
	// the last returns its tree without running git. Close releases it.
	Watch bool
	// Watchers, when set, bounds the watchers of the stores that share
	// it (watchers.go).
	Watchers *Watchers

	gitRuns atomic.Int64 // git processes started, for tests
	hooks   watchHooks   // test seams; zero in use

	// mu guards the watcher's place in the Store: a leaf, never held
	// across I/O (a snapshot takes the watcher out, uses it, puts it
	// back).
	mu       sync.Mutex
	w        *watcher // nil: none yet, or taken by a snapshot
	busy     bool     // a snapshot has taken the watcher
	closed   bool
	off      string // why this store watches no more ("": it may)
	failures int    // watcher starts failed in a row
	evicted  bool   // Watchers took the watcher away while a snapshot had it
}

// attributes unset everything that would make a blob differ from the
// file's bytes, over whatever the working tree's .gitattributes say
// ($GIT_DIR/info/attributes takes precedence).
const attributes = "* -text -filter -ident -working-tree-encoding -eol\n"

// baseEnv is Loop's environment without the variables that would point
// git elsewhere (GIT_DIR, GIT_INDEX_FILE, ...).
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// git runs a git command on the private directory and the repository's
// working tree, with stdin, and returns its stdout.
func (s *Store) git(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	full := append([]string{
		"-c", "core.fsmonitor=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
		"-c", "core.fsync=loose-object", "-c", "core.fsyncMethod=batch",
		// One thread: on a small, busy machine the preload threads cost
		// more than the stat calls they share out.
		"-c", "core.preloadIndex=false", "-c", "core.untrackedCache=true",
		"-c", "advice.addEmbeddedRepo=false", "-c", "core.quotePath=false", "-c", "core.safecrlf=false",
	}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	s.gitRuns.Add(1)
	cmd.Dir = s.Repo.Top
	cmd.Env = append(baseEnv(), "GIT_DIR="+s.GitDir, "GIT_WORK_TREE="+s.Repo.Top, "GIT_INDEX_FILE="+s.Index,
		"GIT_AUTHOR_NAME=Loop", "GIT_AUTHOR_EMAIL=loop@localhost", "GIT_COMMITTER_NAME=Loop", "GIT_COMMITTER_EMAIL=loop@localhost")
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "..."
		}
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return out, nil
}

// prepare makes the private directory on first use and keeps what it
// borrows from the repository current: its objects and its excludes.
func (s *Store) prepare(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.GitDir, "HEAD")); err != nil {
		if err := os.MkdirAll(filepath.Dir(s.GitDir), 0o700); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, "git", "init", "-q", "--bare", "--template=", "--object-format="+s.Repo.Format, s.GitDir)
		s.gitRuns.Add(1)
		cmd.Env = baseEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git init %s: %w: %s", s.GitDir, err, strings.TrimSpace(string(out)))
		}
	}
	if err := os.MkdirAll(filepath.Join(s.GitDir, "info"), 0o700); err != nil {
		return err
	}
	exclude, err := os.ReadFile(s.Repo.Exclude)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for name, want := range map[string][]byte{
		filepath.Join(s.GitDir, "objects", "info", "alternates"): []byte(s.Repo.Objects + "\n"),
		filepath.Join(s.GitDir, "info", "exclude"):               exclude,
		filepath.Join(s.GitDir, "info", "attributes"):            []byte(attributes),
	} {
		if have, err := os.ReadFile(name); err == nil && bytes.Equal(have, want) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(name, want, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Snapshot adds the working tree to the private index and writes it as a
// tree, returning the tree's id. Its objects are durable when it returns
// (core.fsync). The first snapshot starts from a copy of the repository's
// index, so that only what changed since the user's last git command is
// read; if git cannot use that copy, it starts empty. With Watch, a
// snapshot the watcher vouches for (nothing changed since the last one
// that ran git, and that one's tree not pruned since) runs no git at all.
func (s *Store) Snapshot(ctx context.Context) (string, error) {
	w, watching := s.takeWatcher()
	if watching {
		defer func() { s.putWatcher(w) }()
	}
	var gen string
	var genOK bool
	if watching {
		gen, genOK = s.generation()
	}
	if w != nil {
		w.drain()
		if tree, ok := w.unchanged(gen, genOK); ok {
			return tree, nil
		}
	}
	if err := s.prepare(ctx); err != nil {
		return "", fmt.Errorf("snapshot: %w", err)
	}
	seeded := s.seed()
	if watching && !genOK {
		if err := s.newGeneration(); err == nil {
			gen, genOK = s.generation()
		}
	}
	if watching && (w == nil || w.rebuild || w.gen != gen || seeded) {
		// The watch set follows the ignore rules and the index's
		// tracked files: made again when they may have changed.
		if w != nil {
			w.close()
			w = nil
		}
		w = s.startWatcher(ctx)
	}
	if w != nil {
		// From here on, a change makes the next snapshot run git: one
		// during this snapshot may be missed by it.
		w.begin()
	}
	tree, err := s.snapshotGit(ctx, seeded)
	if err != nil {
		return "", err
	}
	if w != nil && genOK {
		w.done(tree, gen)
	}
	switch {
	case s.Watchers == nil || !watching:
	case w != nil:
		if victim := s.Watchers.used(s); victim != nil {
			victim.letGo()
		}
	default:
		s.Watchers.forget(s)
	}
	return tree, nil
}

// seed starts the private index as a copy of the repository's when there
// is none, and says whether it did.
func (s *Store) seed() bool {
	if _, err := os.Stat(s.Index); !errors.Is(err, os.ErrNotExist) {
		return false
	}
	b, err := os.ReadFile(s.Repo.Index)
	if err != nil {
		return false
	}
	return os.WriteFile(s.Index, b, 0o600) == nil
}

// snapshotGit is a snapshot by git: the working tree added to the private
// index, written as a tree.
func (s *Store) snapshotGit(ctx context.Context, seeded bool) (string, error) {
	if _, err := s.git(ctx, nil, "add", "-A"); err != nil {
		if !seeded || ctx.Err() != nil {
			return "", err
		}
		os.Remove(s.Index)
		if _, err := s.git(ctx, nil, "add", "-A"); err != nil {
			return "", err
		}
	}
	if s.hooks.afterAdd != nil {
		s.hooks.afterAdd()
	}
	// Nothing added: the index file is as the last snapshot left it, and
	// so is its tree (git add rewrites the index only when it changes).
	last := filepath.Join(s.GitDir, lastTreeFile)
	stamp := indexStamp(s.Index)
	if b, err := os.ReadFile(last); err == nil && stamp != "" {
		if have, tree, ok := strings.Cut(strings.TrimSpace(string(b)), " "); ok && have == stamp {
			return tree, nil
		}
	}
	out, err := s.git(ctx, nil, "write-tree")
	if err != nil {
		return "", err
	}
	tree := strings.TrimSpace(string(out))
	if stamp := indexStamp(s.Index); stamp != "" {
		// A cache only: losing it costs one write-tree.
		os.WriteFile(last, []byte(stamp+" "+tree+"\n"), 0o600)
	}
	return tree, nil
}

// lastTreeFile, in the private git directory, holds the index file's
// stamp (indexStamp) after the last snapshot, and that snapshot's tree.
const lastTreeFile = "loop-last-tree"

// indexStamp identifies a version of the index file: its size and
// modification time (git replaces it by a rename, so each write has its
// own), "" when it cannot be read.
func indexStamp(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d.%d", fi.Size(), fi.ModTime().UnixNano())
}

// Change is one path that differs between two trees. A mode of 0 is a
// path absent from its tree.
type Change struct {
	Path             string // slash-separated, relative to Repo.Top
	OldMode, NewMode uint32
	OldID, NewID     string
}

// Diff lists the files that differ between trees a and b (no renames:
// a moved file is deleted and added).
func (s *Store) Diff(ctx context.Context, a, b string) ([]Change, error) {
	if a == b {
		return nil, nil
	}
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	out, err := s.git(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", "--raw", a, b)
	if err != nil {
		return nil, err
	}
	var changes []Change
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(string(fields[i]), ":"))
		if len(meta) < 5 {
			return nil, fmt.Errorf("git diff-tree: unexpected line %q", fields[i])
		}
		om, _ := strconv.ParseUint(meta[0], 8, 32)
		nm, _ := strconv.ParseUint(meta[1], 8, 32)
		c := Change{Path: string(fields[i+1]), OldMode: uint32(om), NewMode: uint32(nm), OldID: meta[2], NewID: meta[3]}
		if c.OldMode == 0 {
			c.OldID = ""
		}
		if c.NewMode == 0 {
			c.NewID = ""
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// Blobs reads the contents of the blobs ids from the private directory
// (or the repository's objects it borrows). A missing one is an error
// naming it.
func (s *Store) Blobs(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(ids) == 0 {
		return out, nil
	}
	// The borrowed objects are found again even if a crash lost the
	// alternates file (it is not fsynced: prepare writes it again).
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	var in bytes.Buffer
	for _, id := range ids {
		in.WriteString(id + "\n")
	}
	raw, err := s.git(ctx, &in, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	for range ids {
		head, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		f := strings.Fields(head)
		if len(f) == 2 && f[1] == "missing" {
			return nil, fmt.Errorf("the checkpoint's object %s is missing (pruned from the repository it borrowed it from?)", f[0])
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("git cat-file: unexpected line %q", head)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("git cat-file: unexpected line %q", head)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		r.ReadByte() // the newline after the content
		out[f[0]] = b
	}
	return out, nil
}

// Keep makes the private directory keep the trees trees (a ref each) and
// drops everything else it holds.
func (s *Store) Keep(ctx context.Context, trees []string) error {
	if _, err := os.Stat(filepath.Join(s.GitDir, "HEAD")); err != nil {
		return nil
	}
	out, err := s.git(ctx, nil, "for-each-ref", "--format=%(refname)", "refs/loop/")
	if err != nil {
		return err
	}
	var in bytes.Buffer
	for _, ref := range strings.Fields(string(out)) {
		fmt.Fprintf(&in, "delete %s\n", ref)
	}
	for _, t := range trees {
		fmt.Fprintf(&in, "update refs/loop/%s %s\n", t, t)
	}
	if in.Len() > 0 {
		if _, err := s.git(ctx, &in, "update-ref", "--stdin"); err != nil {
			return err
		}
	}
	// Before the prune: a watcher of this directory (this process's or
	// another's) no longer trusts the tree it remembers (watch.go).
	if err := s.newGeneration(); err != nil {
		return err
	}
	if _, err := s.git(ctx, nil, "prune", "--expire=now"); err != nil {
		return err
	}
	// The private index may name blobs the prune removed (a file's
	// content no kept tree holds): the next snapshot starts afresh
	// rather than trust them.
	for _, name := range []string{s.Index, filepath.Join(s.GitDir, lastTreeFile)} {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// BlobID is the git blob id of content in the object format format
// ("sha1" or "sha256").
func BlobID(format string, content []byte) string {
	header := "blob " + strconv.Itoa(len(content)) + "\x00"
	if format == "sha256" {
		h := sha256.New()
		io.WriteString(h, header)
		h.Write(content)
		return hex.EncodeToString(h.Sum(nil))
	}
	h := sha1.New()
	io.WriteString(h, header)
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// FormatOf is the object format of a blob id: "sha256" for 64 hex digits,
// else "sha1".
func FormatOf(id string) string {
	if len(id) == 64 {
		return "sha256"
	}
	return "sha1"
}
