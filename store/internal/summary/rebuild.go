package summary

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/loopdev/loop/store/internal/fsys"
)

// Rebuilding the index from every header of a scope, keeping the records
// writers append meanwhile (docs/storage.md, "Summary index"). The store
// reads the headers (store/summaryrebuild.go): Prepare before, Finish
// with what it read.

// Rebuild is a rebuild under way: the index file it started from, so that
// records writers append while the headers are read are kept.
type Rebuild struct {
	x        Index
	sd       string
	fi       os.FileInfo
	size     int64
	gen      uint64
	wasStale bool
}

// NotSession is a name under a scope directory that holds no valid
// session of the current format: the index records it so that lists know
// what it is.
type NotSession struct {
	Name      string
	Malformed bool // a current-format header that breaks the format
}

// Prepare makes sure an index file exists in scope directory sd (so that
// writers append their records while the headers are read) and notes its
// identity and size. It takes the scope's flock exclusively without
// waiting: a writer in the middle of a change makes the rebuild wait for a
// later list. nil means no rebuild now.
func (x Index) Prepare(sd string) *Rebuild {
	p := &Rebuild{x: x, sd: sd}
	p.gen, p.wasStale = x.Marks.Stale(sd)
	lock, err := x.FS.Lock(sd)
	if err != nil {
		return nil
	}
	defer lock.Close()
	path := filepath.Join(sd, FileName)
	fi, err := x.FS.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		f, cerr := x.FS.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if cerr != nil {
			return nil
		}
		_, werr := f.Write([]byte(FileHeader))
		f.Close()
		if werr != nil {
			x.FS.RemoveAll(path)
			return nil
		}
		fi, err = x.FS.Stat(path)
	}
	if err != nil {
		return nil
	}
	p.fi, p.size = fi, fi.Size()
	return p
}

// Finish writes the new index: one exact claim per session read (recs),
// one per name that holds none (others), then the records writers
// appended since Prepare, whose claims are newer. It replaces the index
// only if that is still the file it started from, under the exclusive
// flock (no writer between its records), through a temporary file, fsync,
// rename and a directory fsync.
func (p *Rebuild) Finish(recs []Record, others []NotSession) {
	fs := p.x.FS
	buf := make([]byte, 0, len(FileHeader)+(len(recs)+len(others))*LineSize)
	buf = append(buf, FileHeader...)
	for i := range recs {
		buf = AppendLine(buf, recs[i].ID, ClaimOf(recs[i]))
	}
	for _, o := range others {
		if !canonicalUUID([]byte(o.Name)) {
			continue // no record can name it; lists read it every time
		}
		st := byte(Other)
		if o.Malformed {
			st = Malformed
		}
		buf = AppendLine(buf, o.Name, Claim{State: st})
	}
	// The new file is written and fsynced before the lock is taken:
	// writers wait for the lock, so it covers only what must be atomic.
	path := filepath.Join(p.sd, FileName)
	f, tmp, err := fsys.CreateUnique(fs, path+".tmp-")
	if err != nil {
		return
	}
	if err := fsys.WriteSyncClose(f, tmp, buf); err != nil {
		fs.RemoveAll(tmp)
		return
	}
	published := false
	defer func() {
		if !published {
			fs.RemoveAll(tmp)
		}
	}()
	lock, err := fs.Lock(p.sd)
	if err != nil {
		return
	}
	defer lock.Close()
	fi, err := fs.Stat(path)
	if err != nil || !os.SameFile(fi, p.fi) || fi.Size() < p.size {
		return // replaced or removed meanwhile: a later list rebuilds
	}
	if fi.Size() > p.size {
		data, err := fs.ReadFile(path)
		if err != nil || int64(len(data)) < p.size {
			return
		}
		tail := data[p.size:]
		// Writers append whole lines under the shared lock, and none
		// holds it now, so the tail is whole lines.
		if _, torn, ok := Scan(append([]byte(FileHeader), tail...), func([]byte, Claim) {}); !ok || torn {
			return
		}
		f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return
		}
		if err := fsys.WriteSyncClose(f, tmp, tail); err != nil {
			return
		}
	}
	if err := fs.Rename(tmp, path); err != nil {
		return
	}
	published = true
	if err := fs.SyncDir(p.sd); err != nil {
		// The rename may not survive a crash; the old file that would
		// come back lacks the records appended from now on.
		fs.RemoveAll(path)
		return
	}
	p.x.Marks.ClearStale(p.sd, p.gen, p.wasStale)
}
