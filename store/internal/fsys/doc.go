// Package fsys is the file-system seam of the store and of the indexes
// beside it (store/search, store/internal/summary): the one interface
// every durability step (write, fsync, rename, directory fsync, flock)
// goes through, so that the store's tests can fail any single step, of a
// commit or of an index write, and check what survives. It also holds the
// steps they share: making a directory durably, creating a uniquely named
// temporary file (the <name>.tmp-<digits> that store/sweep.go sweeps),
// writing and fsyncing it, and the CRC-32C of the logs and indexes.
//
// It imports nothing of the module but internal/flock.
package fsys
