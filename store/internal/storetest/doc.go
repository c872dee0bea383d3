// Package storetest holds what the tests of the store and of its indexes
// (store/search, store/internal/summary) share: a file system that fails
// chosen steps (FaultFS, over the seam of store/internal/fsys) and the
// realistic prompt the benchmarks commit. Only tests import it.
package storetest
