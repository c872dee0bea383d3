package store

import "testing"

// What store_test (store/golden_search_test.go) needs of the golden root:
// the search index of its scope is pinned there, by a package that the
// store's own tests cannot import (store/search imports store).

const (
	GoldenDir       = goldenDir
	GoldenWorkspace = goldenWorkspace
)

var (
	GoldenFiles       = goldenFiles
	GoldenSearchFiles = goldenSearchFiles
	CopyGoldenFrom    = copyGoldenFrom
)

// UpdateGolden reports whether the test run rewrites the golden files
// (go test ./store -run Golden -update).
func UpdateGolden() bool { return *update }

// WriteGoldenWith writes the golden root as writeGolden does: opened runs
// on the new root before any session is made, afterFirstCommit after the
// golden session's first commit.
func WriteGoldenWith(t *testing.T, opened, afterFirstCommit func(*Root)) *Root {
	t.Helper()
	r, _, _ := writeGoldenWith(t, goldenIndex{opened: opened, afterFirstCommit: afterFirstCommit})
	return r
}
