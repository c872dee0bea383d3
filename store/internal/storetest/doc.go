// Package storetest holds what the tests of the store and of its indexes
// (store/search, store/internal/summary) share: a file system that fails
// chosen steps (FaultFS, over the seam of store/internal/fsys), the
// messages they commit, and the directories of the benchmarks' fixtures.
// Only tests import it.
package storetest
