package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
)

// Rebuilding the summary index from every header of a scope, keeping the
// records writers append meanwhile (docs/storage.md, "Summary index").

// scanRebuilding reads every header of the scope, as List does; with
// rebuild it also rewrites the index from what it read. err is a
// *ListError alongside the headers that could be read, or another error
// and no headers.
func (r *Root) scanRebuilding(workspaceID, sd string, rebuild bool) ([]Header, error) {
	var prep *rebuildPrep
	if rebuild {
		prep = r.prepareRebuild(sd)
	}
	heads, others, err := r.scanAll(workspaceID)
	var lerr *ListError
	if err != nil && !errors.As(err, &lerr) {
		return nil, err
	}
	if prep != nil {
		prep.finish(heads, others)
	}
	return heads, err
}

// rebuildSummaries rewrites the index from every header of the scope.
func (r *Root) rebuildSummaries(workspaceID, sd string) {
	prep := r.prepareRebuild(sd)
	if prep == nil {
		return
	}
	heads, others, err := r.scanAll(workspaceID)
	var lerr *ListError
	if err != nil && !errors.As(err, &lerr) {
		return
	}
	prep.finish(heads, others)
}

// rebuildPrep is a rebuild under way: the index file it started from, so
// that records writers append while the headers are read are kept.
type rebuildPrep struct {
	r        *Root
	sd       string
	fi       os.FileInfo
	size     int64
	gen      uint64
	wasStale bool
}

// prepareRebuild makes sure an index file exists (so that writers append
// their records while the headers are read) and notes its identity and
// size. It takes the scope's flock exclusively without waiting: a writer
// in the middle of a change makes the rebuild wait for a later list. nil
// means no rebuild now.
func (r *Root) prepareRebuild(sd string) *rebuildPrep {
	p := &rebuildPrep{r: r, sd: sd}
	p.gen, p.wasStale = r.marks.summariesStale(sd)
	lock, err := r.fs.Lock(sd)
	if err != nil {
		return nil
	}
	defer lock.Close()
	path := filepath.Join(sd, summariesFile)
	fi, err := r.fs.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		f, cerr := r.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if cerr != nil {
			return nil
		}
		_, werr := f.Write([]byte(summariesHeader))
		f.Close()
		if werr != nil {
			r.fs.RemoveAll(path)
			return nil
		}
		fi, err = r.fs.Stat(path)
	}
	if err != nil {
		return nil
	}
	p.fi, p.size = fi, fi.Size()
	return p
}

// finish writes the new index: one exact claim per session read, then the
// records writers appended since prepareRebuild, whose claims are newer.
// It replaces the index only if that is still the file it started from,
// under the exclusive flock (no writer between its records), through a
// temporary file, fsync, rename and a directory fsync.
func (p *rebuildPrep) finish(heads []Header, others []scanOther) {
	fs := p.r.fs
	buf := make([]byte, 0, len(summariesHeader)+(len(heads)+len(others))*summaryLineSize)
	buf = append(buf, summariesHeader...)
	for i := range heads {
		buf = appendSummaryLine(buf, heads[i].ID, claimOf(&heads[i]))
	}
	for _, o := range others {
		if !validID(o.name) {
			continue // no record can name it; lists read it every time
		}
		st := byte(claimOther)
		if o.malformed {
			st = claimMalformed
		}
		buf = appendSummaryLine(buf, o.name, claim{state: st})
	}
	// The new file is written and fsynced before the lock is taken:
	// writers wait for the lock, so it covers only what must be atomic.
	path := filepath.Join(p.sd, summariesFile)
	f, tmp, err := createUnique(fs, path+".tmp-")
	if err != nil {
		return
	}
	if err := writeSyncClose(f, tmp, buf); err != nil {
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
		if _, torn, ok := scanSummaries(append([]byte(summariesHeader), tail...), func([]byte, claim) {}); !ok || torn {
			return
		}
		f, err := fs.OpenFile(tmp, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return
		}
		if err := writeSyncClose(f, tmp, tail); err != nil {
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
	p.r.marks.clearSummariesStale(p.sd, p.gen, p.wasStale)
}

// summarize filters and orders headers as List does.
func summarize(heads []Header, archived bool) []Summary {
	out := make([]Summary, 0, len(heads))
	for i := range heads {
		h := &heads[i]
		if archived {
			if h.ArchivedAt == nil {
				continue
			}
		} else if h.ArchivedAt != nil || h.UserMessageCount == 0 {
			continue
		}
		out = append(out, h.Summary())
	}
	slices.SortFunc(out, func(a, b Summary) int {
		switch {
		case a.UpdatedAt != b.UpdatedAt:
			if a.UpdatedAt > b.UpdatedAt {
				return -1
			}
			return 1
		case a.ID > b.ID:
			return -1
		case a.ID < b.ID:
			return 1
		}
		return 0
	})
	return out
}
