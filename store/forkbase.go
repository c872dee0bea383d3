package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/loopdev/loop/store/internal/fsys"
)

// A fork reads its parent's part from the parent's directory while the
// parent keeps it. Before the parent's files lose that part (a delete, a
// rewind below it), the part is written into the fork's directory as its
// base (base/: a session directory of the parent's first messages and
// timings, without a parent of its own), which the fork reads from then on
// (Session.parentDir). The base appears whole or not at all, as any new
// session directory; the fork's own files are not touched, so a handle
// that has the fork open, in this process or another, goes on as before.
// A crash after some bases are written leaves them, harmless: the
// parent's part and the base hold the same lines.

// forkRef is a fork found in the scope.
type forkRef struct {
	dir    string
	parent ParentRef
}

// forksNeeding returns the forks of this session, in its scope, that read
// more than its first msgs messages or its first timings prompt timings
// from it (-1, -1: every fork that reads from it). A fork rewound below
// its part reads more timings than those of the messages it shares
// (store/rewind.go), so a rewind of this session that keeps a fork's
// messages may still cut timings it reads. It reads every header of the
// scope.
func (s *Session) forksNeeding(msgs, timings int) ([]forkRef, error) {
	scope := filepath.Dir(s.dir)
	entries, err := s.fs.ReadDir(scope)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", scope, err)
	}
	var out []forkRef
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || name == s.id {
			continue
		}
		dir := filepath.Join(scope, name)
		hpath := filepath.Join(dir, headerFile)
		data, err := s.fs.ReadFile(hpath)
		if err != nil {
			continue // not a session, or one whose header cannot be read: it reads nothing of this one
		}
		h, err := parseHeader(data, hpath)
		if err != nil || h.Parent == nil || h.Parent.SessionID != s.id ||
			(h.Parent.MessageCount <= msgs && h.Parent.Timings <= timings) {
			continue
		}
		if exists(s.fs, filepath.Join(dir, baseDirName, headerFile)) {
			continue
		}
		out = append(out, forkRef{dir: dir, parent: *h.Parent})
	}
	return out, nil
}

// giveForksBases writes a base into every fork that reads more than the
// first msgs messages or the first timings prompt timings of this session
// (-1, -1: every fork). p is this session read with its chain, nil to read
// it when a fork needs it.
func (s *Session) giveForksBases(p *Session, msgs, timings int) error {
	forks, err := s.forksNeeding(msgs, timings)
	if err != nil || len(forks) == 0 {
		return err
	}
	if p == nil {
		if p, err = s.probe(s.dir, s.base); err != nil {
			return fmt.Errorf("forks of %s need its history: %w", s.id, err)
		}
	}
	for _, f := range forks {
		if err := s.writeBase(p, f); err != nil {
			return fmt.Errorf("give fork %s its part of %s: %w", filepath.Base(f.dir), s.id, err)
		}
	}
	return nil
}

// writeBase writes fork f's base from p, this session's history.
func (s *Session) writeBase(p *Session, f forkRef) error {
	m, t := f.parent.MessageCount, min(f.parent.Timings, len(p.timings))
	if m > p.hdr.MessageCount {
		return malformed(filepath.Join(f.dir, headerFile), "starts with %d messages of %s, which holds %d", m, s.id, p.hdr.MessageCount)
	}
	lines, idx := p.chain.lines(nil, nil, 0, m)
	if crc := fsys.CRC32C(0, lines); crc != f.parent.MessagesCRC {
		return malformed(filepath.Join(f.dir, headerFile), "its part of %s is not the history %s holds", s.id, s.id)
	}
	h := p.hdr.clone()
	h.Version = ForkFormatVersion
	h.Parent, h.PendingFork, h.Recovered, h.PendingRun, h.Compaction = nil, "", nil, "", nil
	h.MessageCount, h.UserMessageCount = m, p.chain.usersAt(m)
	b, err := s.newFork(h, filepath.Join(f.dir, baseDirName), feed{})
	if err != nil {
		return err
	}
	b.base = true
	err = b.create(nil, nil, p.timings[:t:t], indexed(p.timings[:t]), lines, idx)
	if errors.Is(err, errSessionExists) {
		return nil // another writer gave it one first
	}
	if err != nil {
		return err
	}
	return b.release()
}

// dropBaseLeftovers removes what a base write that a crash stopped left
// inside this fork's directory: the base is made as any session is, in a
// locked .tmp-<id>-<random> directory beside where it goes (here, inside
// the fork), then renamed, so no sweep of the scope sees one left behind.
// A writer still at work holds its flock: that one is left alone.
func (s *Session) dropBaseLeftovers() {
	entries, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		lock, err := s.fs.Lock(path)
		if err != nil {
			continue
		}
		s.fs.RemoveAll(path)
		lock.Close()
	}
}
