package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// level is what a grant allows below its path.
type level int

const (
	levelNone  level = iota // nothing
	levelList               // list the directory's entries, nothing else
	levelRead               // read, list and execute
	levelWrite              // everything, writes included
)

// grant is one rule of the ruleset: lvl on path and everything below it.
type grant struct {
	path string
	dir  bool
	lvl  level
}

// writableDevices are writable under every policy: commands write to
// /dev/null all the time, and the others are as harmless (terminals,
// shared memory).
var writableDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm"}

// point is a path where the policy changes what is allowed.
type point struct {
	path string
	lvl  level
}

// plan turns p into grants. Landlock only adds access: a rule grants its
// rights to everything below its path, and nothing can take them back
// further down. So a path that must get less than its parent (a denied
// key store in the readable home, the data root in the writable temp
// directory) cannot sit below a rule granting its parent more. Instead
// the parent is split: it is granted only the listing of its entries, and
// each entry gets its own rule, down the ancestors of the path that gets
// less. Entries that are symbolic links get no rule of their own: what
// they point to is judged by its own place.
//
// Paths that do not exist are left out; paths are resolved to what they
// finally name, so a denied symlink denies its target. The same path
// named twice keeps the narrowest level for ReadOnly over Writable, and
// Writable over Deny (an explicit writable path wins over a default
// denial).
func plan(p Policy) []grant {
	byPath := map[string]level{"/": levelRead}
	set := func(paths []string, lvl level) {
		for _, path := range paths {
			if c, ok := canonical(path); ok {
				byPath[c] = lvl
			}
		}
	}
	set(p.Deny, levelNone)
	set(writableDevices, levelWrite)
	set(p.Writable, levelWrite)
	set(p.ReadOnly, levelRead)
	pl := &planner{}
	for path, lvl := range byPath {
		pl.points = append(pl.points, point{path, lvl})
	}
	slices.SortFunc(pl.points, func(a, b point) int { return strings.Compare(a.path, b.path) })
	pl.visit("/", true, levelRead)
	return pl.grants
}

// canonical is path made absolute with every symlink resolved, and
// whether it exists.
func canonical(path string) (string, bool) {
	if path == "" {
		return "", false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", false
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", false
	}
	return real, true
}

type planner struct {
	points []point // sorted by path
	grants []grant
}

// below reports whether q lies strictly below dir.
func below(q, dir string) bool {
	if dir == "/" {
		return q != "/"
	}
	return strings.HasPrefix(q, dir+"/")
}

// visit grants path (lvl unless a point sets its own) and what lies below.
func (pl *planner) visit(path string, dir bool, lvl level) {
	if i, ok := slices.BinarySearchFunc(pl.points, path, func(p point, s string) int { return strings.Compare(p.path, s) }); ok {
		lvl = pl.points[i].lvl
	}
	if !dir || !pl.lessBelow(path, lvl) {
		if lvl > levelNone {
			pl.grants = append(pl.grants, grant{path, dir, lvl})
		}
		// Points below that get more are granted on their own; they
		// need no split of the paths between.
		for _, q := range pl.topBelow(path) {
			fi, err := os.Lstat(q)
			if err != nil {
				continue
			}
			pl.visit(q, fi.IsDir(), lvl)
		}
		return
	}
	if lvl >= levelRead {
		pl.grants = append(pl.grants, grant{path, true, levelList})
	}
	for _, name := range pl.children(path) {
		child := filepath.Join(path, name)
		fi, err := os.Lstat(child)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		pl.visit(child, fi.IsDir(), lvl)
	}
}

// lessBelow reports whether a point below path allows less than lvl, so
// that a rule on path would grant it too much.
func (pl *planner) lessBelow(path string, lvl level) bool {
	for _, q := range pl.points {
		if below(q.path, path) && q.lvl < lvl {
			return true
		}
	}
	return false
}

// topBelow lists the points below path that no other point below path
// lies above.
func (pl *planner) topBelow(path string) []string {
	var out []string
	for _, q := range pl.points {
		if !below(q.path, path) {
			continue
		}
		if !slices.ContainsFunc(out, func(o string) bool { return below(q.path, o) }) {
			out = append(out, q.path) // sorted: a point comes before its descendants
		}
	}
	return out
}

// children lists the entries of dir, and the next step toward each point
// below it when dir cannot be listed.
func (pl *planner) children(dir string) []string {
	names := map[string]bool{}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			names[e.Name()] = true
		}
	}
	for _, q := range pl.points {
		if below(q.path, dir) {
			rest := strings.TrimPrefix(q.path, dir)
			rest = strings.TrimPrefix(rest, "/")
			first, _, _ := strings.Cut(rest, "/")
			names[first] = true
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
