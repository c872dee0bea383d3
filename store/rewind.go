package store

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store/internal/fsys"
)

// RuntimeRewind is the runtime record of a rewind (version 2):
// {"messageCount", "forkId"}: the history was cut to its first
// messageCount messages, and what it dropped is session forkId. A
// compaction checkpoint recorded before it past messageCount is no longer
// in effect (CheckpointAt).
const RuntimeRewind = "rewind"

type rewindRecord struct {
	MessageCount int    `json:"messageCount"`
	ForkID       string `json:"forkId"`
}

func parseRewind(data json.RawMessage) (rewindRecord, bool) {
	var r rewindRecord
	return r, json.Unmarshal(data, &r) == nil
}

// forkDirPrefix names, inside a session's directory, the directory of the
// fork a rewind is making, until the rewind's header moves it into the
// scope: nobody lists or sweeps it there.
const forkDirPrefix = ".fork-"

// Rewind cuts the session's history to its first k committed messages,
// and keeps what it drops as a new fork of it (its id is returned): the
// fork's history is the whole history before the rewind, its first k
// messages shared with this session. The session's prompt timings, usage
// totals, unread flag and compaction checkpoint follow the cut
// (docs/storage.md, "Forks and rewinds"). Forks of this session that need
// more than its first k messages get their part as a base first
// (store/forkbase.go).
//
// It is atomic: the fork is written whole inside this session's directory,
// then the header that cuts the history and names the fork
// (pendingFork) is published, the commit point, then the fork's directory
// is moved into the scope. A crash before the header leaves the session
// as it was and the fork nowhere to be seen; a crash after it leaves the
// move to the next open that takes the lock (finishPendingFork). k must
// be below the history's length and a place CheckForkPoint accepts.
func (s *Session) Rewind(k int) (forkID string, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return "", err
	}
	if s.kind != onDisk {
		return "", fmt.Errorf("%w: session %s is not stored yet: nothing to rewind", ErrInvalid, s.id)
	}
	n := len(s.msgs)
	if err := CheckForkPoint(s.msgs, k); err != nil {
		return "", err
	}
	if k == n {
		return "", fmt.Errorf("%w: messageCount %d is the whole history: nothing to rewind", ErrInvalid, k)
	}
	if s.diskAhead {
		if err := s.publish(&s.hdr, s.committedLegacy()); err != nil {
			return "", err
		}
		s.diskAhead = false
	}
	// The fork of an earlier rewind that could not be moved into the
	// scope yet is tried again; while it waits, no other rewind may name
	// its own pendingFork, or the leftovers' sweep below would take the
	// waiting one for a leftover and delete what that rewind dropped.
	if err := s.finishPendingFork(nil); err != nil {
		return "", fmt.Errorf("rewind again once the fork of the earlier rewind can move: %w", err)
	}
	s.dropForkLeftovers()
	p, err := s.probe(s.dir, s.base)
	if err != nil {
		return "", err
	}
	if p.hdr.MessagesCRC != s.hdr.MessagesCRC {
		return "", fmt.Errorf("%w: %s changed while it was read", ErrStale, s.dir)
	}
	t, span, spans := splitTimings(s.timings, k)
	// Forks of this session that read past its first k messages or its
	// first t timings (which the cut keeps unchanged) read their part
	// from a base of their own from now on.
	if err := s.giveForksBases(p, k, t); err != nil {
		return "", err
	}
	crcK := p.chain.crcAt(k)
	users := countUsers(s.msgs[:k])

	// The fork: everything the session holds now, its first k messages
	// shared with it.
	fh := s.forkHeader(s.nextID(), k, crcK, t, "")
	fh.CreatedAt, fh.UpdatedAt = s.hdr.CreatedAt, s.hdr.UpdatedAt
	fh.Usage, fh.Compaction = s.hdr.Usage, clonePtr(s.hdr.Compaction)
	// Output nobody read yet is the dropped part's: still unread there.
	fh.Unread = s.hdr.Unread
	fh.MessageCount, fh.UserMessageCount = n, s.hdr.UserMessageCount
	var frt []RuntimeRecord
	if cp := LatestCheckpoint(s.rt); cp != nil {
		frt = []RuntimeRecord{cp.Record()}
	} else {
		fh.Compaction = nil
	}
	var fown []TimingAt
	for i := t; i < len(s.timings); i++ {
		fown = append(fown, TimingAt{Index: i, Timing: s.timings[i]})
	}
	lines, idx := p.chain.lines(nil, nil, k, n)
	fdir := filepath.Join(s.dir, forkDirPrefix+fh.ID)
	f, err := s.newFork(fh, fdir, feed{})
	if err != nil {
		return "", err
	}
	all := s.msgs[:n:n]
	if err := f.create(all, frt, s.timings, fown, lines, idx); err != nil {
		return "", err
	}
	f.release()

	// The session's cut: a header naming the first k messages (and, below
	// its own parent's part, a shorter part of the parent), a cut of the
	// timings and the rewind's runtime record, appended and fsynced first.
	// parent.timings stays as it is even below the parent's part: the
	// timing lines already in this session's log were written over that
	// many of the parent's timings, and a reader folds them over as many
	// again; the cut then drops those past t (docs/storage.md, "Forks and
	// rewinds").
	next := s.hdr.clone()
	next.Version = ForkFormatVersion
	next.MessageCount, next.UserMessageCount, next.MessagesCRC = k, users, crcK
	if next.Parent != nil && k <= next.Parent.MessageCount {
		next.Parent.MessageCount, next.Parent.UserMessageCount, next.Parent.MessagesCRC = k, users, crcK
		next.MessagesBytes = 0
	} else {
		next.MessagesBytes = p.chain.ownOffset(k - p.chain.base)
	}
	kept := s.timings[:t:t]
	tbytes := cutLine(t)
	ntm := 1
	if spans {
		kept = append(kept, span)
		enc, err := encodeTimings([]TimingAt{{Index: t, Timing: span}})
		if err != nil {
			return "", err
		}
		tbytes = append(tbytes, enc...)
		ntm++
	}
	rec, _ := jsonenc.Marshal(rewindRecord{MessageCount: k, ForkID: fh.ID}) // a number and a string: cannot fail
	rrec := RuntimeRecord{Type: RuntimeRewind, Time: s.now().UnixMilli(), Data: rec}
	rbytes, err := encodeRuntime([]RuntimeRecord{rrec})
	if err != nil {
		return "", err
	}
	allRT := append(s.rt[:len(s.rt):len(s.rt)], rrec)
	next.Compaction = nil
	if cp := CheckpointAt(allRT, k); cp != nil {
		next.Compaction = cp.Meta()
	}
	// The dropped runs' calls go from the ledger; what no timing holds
	// (an import's calls, titles, compactions) stays.
	next.Usage = s.hdr.Usage
	next.Usage.UsageSum.Sub(timingsUsage(s.timings[len(kept):]).UsageSum)
	next.Unread, next.Recovered, next.PendingRun, next.PendingFork = false, nil, "", fh.ID
	next.UpdatedAt = max(s.now().UnixMilli(), next.UpdatedAt)
	next.RuntimeCount, next.RuntimeBytes = s.hdr.RuntimeCount+1, s.hdr.RuntimeBytes+int64(len(rbytes))
	next.RuntimeCRC = fsys.CRC32C(s.hdr.RuntimeCRC, rbytes)
	if s.legacyTimings {
		// The timings header.json held go to timings.jsonl first, as a
		// commit moves them.
		enc, err := encodeTimings(indexed(s.timings))
		if err != nil {
			return "", err
		}
		tbytes = append(enc, tbytes...)
		ntm += len(s.timings)
	}
	next.TimingsCount, next.TimingsBytes = s.hdr.TimingsCount+ntm, s.hdr.TimingsBytes+int64(len(tbytes))
	next.TimingsCRC = fsys.CRC32C(s.hdr.TimingsCRC, tbytes)
	if err := next.validate(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := s.appendCut(rbytes, tbytes, &next); err != nil {
		return "", err
	}
	s.mu.Lock()
	s.msgs = s.msgs[:k:k]
	s.rt = allRT
	s.timings = kept
	s.hdr = next
	s.mu.Unlock()
	s.legacyTimings = false
	for i := range s.taken {
		s.taken[i] = min(s.taken[i], k)
	}
	s.committed()
	// The rewind happened: a fork that cannot move yet waits for the
	// next open, rewind or delete.
	_ = s.finishPendingFork(&Commit{Header: &fh, Messages: all, From: k})
	return fh.ID, nil
}

// appendCut is the commit protocol for a rewind's header: the runtime
// record and the timing lines appended after the committed ranges and
// fsynced, then the header published. The message log and the index are
// not written: the next commit cuts them back to the new range.
func (s *Session) appendCut(rt, tm []byte, next *Header) error {
	if s.tmF == nil {
		if err := s.createTimingsFile(); err != nil {
			return err
		}
	}
	logs := []struct {
		f         fsys.File
		name      string
		committed int64
		data      []byte
	}{
		{s.rtF, runtimeFile, s.hdr.RuntimeBytes, rt},
		{s.tmF, timingsFile, s.hdr.TimingsBytes, tm},
	}
	for _, l := range logs {
		path := filepath.Join(s.dir, l.name)
		if err := truncateTail(l.f, path, l.committed); err != nil {
			return err
		}
		if _, err := l.f.WriteAt(l.data, l.committed); err != nil {
			return fmt.Errorf("append to %s: %w", path, err)
		}
	}
	pubs := s.publishing(&s.hdr, next)
	for _, l := range logs {
		if err := l.f.Sync(); err != nil {
			pubs.done(false)
			return fsys.PathError("fsync", filepath.Join(s.dir, l.name), err)
		}
	}
	return s.publishWith(next, nil, pubs)
}

// finishPendingFork moves the fork a rewind made into the scope, if it is
// still inside this session's directory, and forgets it: the header that
// names it is published, so the rewind happened. A failure leaves it for
// the next open, rewind or delete, and is returned. Once the fork is in
// the scope, the observers are told of it (forkPlaced; made: the rewind's
// commit of it, nil when this is not the rewind that made it). Call it
// holding wmu (or while opening).
func (s *Session) finishPendingFork(made *Commit) error {
	id := s.hdr.PendingFork
	if id == "" || s.readOnly != nil {
		return nil
	}
	if err := movePendingFork(s.fs, s.dir, id); err != nil {
		return err
	}
	// The next header written drops it.
	s.mu.Lock()
	s.hdr.PendingFork = ""
	s.mu.Unlock()
	s.forkPlaced(id, made)
	return nil
}

// movePendingFork is a rewind's last step for the session in dir, whose
// lock the caller holds: the fork id it made, if it is still inside dir,
// is renamed into the scope and the scope fsynced (docs/storage.md,
// "Forks and rewinds").
func movePendingFork(fs fsys.FS, dir, id string) error {
	src := filepath.Join(dir, forkDirPrefix+id)
	if !exists(fs, src) {
		return nil
	}
	scope := filepath.Dir(dir)
	dst := filepath.Join(scope, id)
	if exists(fs, dst) {
		// Not ours to replace: a person must look.
		return fmt.Errorf("the fork %s of a rewind is still in %s, and %s is taken", id, dir, dst)
	}
	if err := fs.Rename(src, dst); err != nil {
		return fmt.Errorf("move the fork %s of a rewind out of %s: %w", id, dir, err)
	}
	if err := fs.SyncDir(scope); err != nil {
		return fsys.PathError("fsync", scope, err)
	}
	fs.SyncDir(dir)
	return nil
}

// dropForkLeftovers removes what a rewind that did not reach its header
// left inside the session's directory: it holds the lock, so nobody else
// is making one.
func (s *Session) dropForkLeftovers() {
	entries, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, forkDirPrefix) || strings.HasPrefix(name, ".tmp-") {
			if name != forkDirPrefix+s.hdr.PendingFork {
				s.fs.RemoveAll(filepath.Join(s.dir, name))
			}
		}
	}
}
