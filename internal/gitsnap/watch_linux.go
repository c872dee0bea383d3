//go:build linux

package gitsnap

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The inotify watcher (watch.go says what it vouches for). One inotify
// descriptor per store; a watch on every directory of the working tree
// but .git and the ignored ones, on every file of the tree with more than
// one link (a write through another link reaches no directory's watch),
// and on the directories of the rule files, for their names.

const (
	// dirMask is every change of a directory's entries and of the
	// directory itself; reads and opens are not changes.
	dirMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ONLYDIR
	// fileMask is every change of one file's content, mode or links.
	fileMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW
	// selfGone: the watched directory or file itself went away.
	selfGone = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_IGNORED | unix.IN_UNMOUNT
)

// localFileSystems are the file systems whose every change goes through
// this kernel, so inotify sees it (not NFS, CIFS or FUSE, where another
// machine or process may change files unseen).
var localFileSystems = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlayfs",
	unix.F2FS_SUPER_MAGIC:      "f2fs",
	0x2fc12fc1:                 "zfs",
}

type watcher struct {
	watchState
	fd    int
	hooks *watchHooks
	dirs  map[int]string          // the tree's directories, by watch
	files map[int]bool            // the tree's files with other links
	rules map[int]map[string]bool // directories of rule files: the names that count
	devs  map[uint64]bool         // file systems checked
	n     int                     // watches held
	max   int
	// created are new files (not directories) to look at at the end of
	// the drain, in case they have other links.
	created []string
	buf     []byte
}

// newWatcher makes the watch set: the rule files' directories first, so
// that a change of them from then on is seen, then what git ignores by
// those rules, then the tree's directories, each watched before it is
// read; then git is asked again, and a different answer (a rule changed
// meanwhile) is a failure, tried again at the next snapshot.
func (s *Store) newWatcher(ctx context.Context) (*watcher, error) {
	rules, err := s.ruleFiles(ctx)
	if err != nil {
		return nil, err
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		// EMFILE (fs.inotify.max_user_instances): perhaps free later.
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &watcher{fd: fd, hooks: &s.hooks, dirs: map[int]string{}, files: map[int]bool{}, rules: map[int]map[string]bool{},
		devs: map[uint64]bool{}, max: s.hooks.maxWatches, buf: make([]byte, 64<<10)}
	if w.max == 0 {
		w.max = watchShare()
		if s.Watchers != nil {
			w.max /= s.Watchers.max
		}
	}
	ok := false
	defer func() {
		if !ok {
			w.close()
		}
	}()
	for _, f := range rules {
		if err := w.watchRule(f); err != nil {
			return nil, err
		}
	}
	// The private copy of info/exclude, read now that its original is
	// watched.
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	ignored, err := s.ignoredDirs(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.walk(s.Repo.Top, ignored); err != nil {
		return nil, err
	}
	again, err := s.ignoredDirs(ctx)
	if err != nil {
		return nil, err
	}
	rulesAgain, err := s.ruleFiles(ctx)
	if err != nil {
		return nil, err
	}
	if !maps.Equal(ignored, again) || !slices.Equal(rules, rulesAgain) {
		return nil, errors.New("the ignore rules changed while the watch was set")
	}
	ok = true
	return w, nil
}

// watchShare is what the watchers of a process may take of the user's
// inotify watches: half of fs.inotify.max_user_watches, so that editors
// and other tools keep theirs; Watchers shares it out.
func watchShare() int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return 4096
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 2 {
		return 4096
	}
	return n / 2
}

func (w *watcher) close() {
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
}

// add adds a watch on p.
func (w *watcher) add(p string, mask uint32) (int, error) {
	if w.n >= w.max {
		return -1, &offError{fmt.Sprintf("the working tree needs more than the %d inotify watches a watcher may take (docs/storage.md, \"File checkpoints\")", w.max)}
	}
	var wd int
	var err error
	if w.hooks.addWatch != nil {
		wd, err = w.hooks.addWatch(w.fd, p, mask)
	} else {
		wd, err = unix.InotifyAddWatch(w.fd, p, mask)
	}
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return -1, err // gone already: its parent's watch saw it go
		}
		return -1, &offError{fmt.Sprintf("inotify watch on %s: %v", p, err)}
	}
	w.n++
	return wd, nil
}

// checkFS refuses a file system inotify cannot be trusted on.
func (w *watcher) checkFS(p string, dev uint64) error {
	if w.devs[dev] {
		return nil
	}
	var magic int64
	if w.hooks.statfs != nil {
		m, err := w.hooks.statfs(p)
		if err != nil {
			return &offError{fmt.Sprintf("statfs %s: %v", p, err)}
		}
		magic = m
	} else {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			return &offError{fmt.Sprintf("statfs %s: %v", p, err)}
		}
		magic = int64(st.Type)
	}
	if _, ok := localFileSystems[magic]; !ok {
		return &offError{fmt.Sprintf("%s is on a file system (type %#x) whose changes inotify may not see", p, magic)}
	}
	w.devs[dev] = true
	return nil
}

// watchRule watches the directory of rule file f for its name, or, when
// that directory does not exist, the nearest one that does for the name
// of the next one down.
func (w *watcher) watchRule(f string) error {
	dir, name := filepath.Dir(f), filepath.Base(f)
	for {
		var st unix.Stat_t
		err := unix.Stat(dir, &st)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if err := w.checkFS(dir, st.Dev); err != nil {
				return err
			}
			// Following a symbolic link to the directory: its entries
			// are the ones git reads.
			wd, err := w.add(dir, dirMask)
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return fmt.Errorf("%s went away while being watched", dir)
			}
			if err != nil {
				return err
			}
			if w.rules[wd] == nil {
				w.rules[wd] = map[string]bool{}
			}
			w.rules[wd][name] = true
			return nil
		}
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			return &offError{fmt.Sprintf("stat %s: %v", dir, err)}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return &offError{"no directory to watch for " + f}
		}
		dir, name = parent, filepath.Base(dir)
	}
}

// walk watches top and every directory under it but .git and ignored,
// each before reading it, so that an entry made after the read is an
// event.
func (w *watcher) walk(top string, ignored map[string]bool) error {
	var st unix.Stat_t
	if err := unix.Lstat(top, &st); err != nil {
		return fmt.Errorf("working tree: %w", err)
	}
	return w.walkDir(top, "", st.Dev, ignored)
}

func (w *watcher) walkDir(abs, rel string, dev uint64, ignored map[string]bool) error {
	if err := w.checkFS(abs, dev); err != nil {
		return err
	}
	wd, err := w.add(abs, dirMask|unix.IN_DONT_FOLLOW)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		if rel == "" {
			return fmt.Errorf("working tree %s: %w", abs, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	w.dirs[wd] = abs
	f, err := os.Open(abs)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &offError{fmt.Sprintf("read %s: %v", abs, err)}
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return &offError{fmt.Sprintf("read %s: %v", abs, err)}
	}
	dirfd := int(f.Fd())
	for _, e := range entries {
		name := e.Name()
		child, childRel := filepath.Join(abs, name), path.Join(rel, name)
		if name == ".git" {
			if rel == "" {
				continue
			}
			// git does not look inside: what changes there (a
			// submodule's HEAD) is out of sight.
			return &offError{"a nested repository or submodule at " + rel}
		}
		switch t := e.Type(); {
		case t.IsDir():
			if ignored[childRel] {
				continue
			}
			var st unix.Stat_t
			if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue // gone: an event of this directory's watch
			}
			if err := w.walkDir(child, childRel, st.Dev, ignored); err != nil {
				return err
			}
		case t.IsRegular():
			var st unix.Stat_t
			if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue
			}
			if st.Nlink > 1 {
				if err := w.watchFile(child); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// watchFile watches a file that has other links.
func (w *watcher) watchFile(p string) error {
	wd, err := w.add(p, fileMask)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	w.files[wd] = true
	return nil
}

// drain reads every queued event without waiting.
func (w *watcher) drain() {
	if w.hooks.overflow {
		// What the kernel does when its queue is full: the events are
		// lost, one overflow event says so.
		for {
			if n, err := unix.Read(w.fd, w.buf); n <= 0 && !errors.Is(err, unix.EINTR) {
				break
			}
		}
		w.handle(-1, unix.IN_Q_OVERFLOW, "")
	}
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil || n <= 0 {
			w.dirty, w.rebuild = true, true
			break
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(w.buf[off:]))
			mask := binary.NativeEndian.Uint32(w.buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(w.buf[off+12:]))
			start := off + unix.SizeofInotifyEvent
			end := min(start+nameLen, n)
			name := strings.TrimRight(string(w.buf[start:end]), "\x00")
			w.handle(int(wd), mask, name)
			off = end
		}
	}
	created := w.created
	w.created = nil
	for _, p := range created {
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
			continue
		}
		if err := w.watchFile(p); err != nil {
			// Not sure any more: the watch set is made again, and
			// stops for good if this fails again.
			w.rebuild = true
		}
	}
}

// handle takes one event in.
func (w *watcher) handle(wd int, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.dirty, w.rebuild = true, true
		return
	}
	names, isRule := w.rules[wd]
	if isRule && (names[name] || mask&selfGone != 0) {
		w.dirty, w.rebuild = true, true
	}
	if dir, ok := w.dirs[wd]; ok {
		w.dirty = true
		// New, moved or removed directories, ignore rules, nested
		// repositories: the watch set is made again.
		if mask&(unix.IN_ISDIR|selfGone) != 0 || name == ".gitignore" || name == ".git" {
			w.rebuild = true
		}
		if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && mask&unix.IN_ISDIR == 0 && name != "" {
			w.created = append(w.created, filepath.Join(dir, name))
		}
		return
	}
	if w.files[wd] {
		w.dirty = true
		if mask&unix.IN_IGNORED != 0 {
			delete(w.files, wd)
			w.n--
		}
		return
	}
	if !isRule {
		// No watch of ours: not sure what changed.
		w.dirty, w.rebuild = true, true
	}
}

// begin drains what is queued and clears the watcher, at the start of a
// snapshot that runs git.
func (w *watcher) begin() {
	w.drain()
	w.dirty, w.tree = false, ""
}
