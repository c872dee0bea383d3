package summary

import "github.com/loopdev/loop/store/internal/fsys"

// Index is one view of the summary indexes of a data root's scopes: the
// file system it goes through (the store's seam, store/internal/fsys, so
// that the store's fault tests reach its every step) and what its owner
// knows of them beyond the files (Marks; nil marks nothing). It is a
// value: the store makes one per use from its current seam.
type Index struct {
	FS    fsys.FS
	Marks *Marks
}
