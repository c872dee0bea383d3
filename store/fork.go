package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
)

// A fork is a session whose history starts with another session's first
// messages, which it reads from there instead of holding a copy
// (docs/storage.md, "Forks and rewinds"): its header's parent names the
// session, how many of its messages, their checksum and how many of its
// prompt timings; its own logs hold what it adds. Deleting the parent, or
// rewinding it below what a fork needs, first writes that part into the
// fork's directory as its base (store/forkbase.go), which the fork then
// reads instead.

// chain is what a load read of a session's logical log: the part its
// parent holds (itself a chain) and its own committed bytes and index
// records. Only short-lived read-only handles keep one (keepChain).
type chain struct {
	parent    *chain
	base      int    // messages before the own log's
	baseUsers int    // user messages among them
	baseCRC   uint32 // their lines' CRC-32C
	own       []byte // the own log's committed bytes
	idx       []byte // its index records
	crc       uint32 // the CRC-32C of the whole history's lines (the header's)
}

// usersAt is the number of user messages among the first k.
func (c *chain) usersAt(k int) int {
	if k <= c.base {
		if c.parent == nil {
			return 0
		}
		return c.parent.usersAt(k)
	}
	n := c.baseUsers
	for j := range k - c.base {
		if readIndexRecord(c.idx, j).kind == kindUser {
			n++
		}
	}
	return n
}

// count is the number of messages of the history.
func (c *chain) count() int { return c.base + len(c.idx)/indexRecordSize }

// ownOffset is where own message j's line starts (j may be the count).
func (c *chain) ownOffset(j int) int64 {
	if j*indexRecordSize >= len(c.idx) {
		return int64(len(c.own))
	}
	return readIndexRecord(c.idx, j).off
}

// crcAt is the CRC-32C of the lines of messages [0, k).
func (c *chain) crcAt(k int) uint32 {
	switch {
	case k == c.count():
		return c.crc
	case k == c.base:
		return c.baseCRC
	case k < c.base:
		return c.parent.crcAt(k)
	}
	return fsys.CRC32C(c.baseCRC, c.own[:c.ownOffset(k-c.base)])
}

// lines appends the lines of messages [from, to) to dst, which must
// start empty, and their index records to idx.
func (c *chain) lines(dst, idx []byte, from, to int) ([]byte, []byte) {
	if from < c.base {
		dst, idx = c.parent.lines(dst, idx, from, min(to, c.base))
		from = c.base
	}
	for j := from - c.base; j < to-c.base; j++ {
		r := readIndexRecord(c.idx, j)
		idx = appendIndexRecord(idx, int64(len(dst)), r.n, r.kind)
		dst = append(dst, c.own[r.off:r.off+int64(r.n)]...)
	}
	return dst, idx
}

// prefix is what a fork's parent gives its history: the first messages
// and timings, and the parent's chain when the fork keeps one.
type prefix struct {
	msgs    []convo.Message
	timings []PromptTiming
	chain   *chain
}

// baseDirName is the directory inside a fork's directory that holds its
// parent's part once the parent is gone (store/forkbase.go).
const baseDirName = "base"

// parentDir is where a fork's parent part is read: its base when it has
// one, else the parent's own directory beside it.
func (s *Session) parentDir(h *Header) (dir string, base bool) {
	b := filepath.Join(s.dir, baseDirName)
	if _, err := s.fs.Stat(filepath.Join(b, headerFile)); err == nil {
		return b, true
	}
	return filepath.Join(filepath.Dir(s.dir), h.Parent.SessionID), false
}

// errProbe marks the read-only handles that read a parent's part.
var errProbe = errors.New("read-only: a fork's parent part")

// loadParent reads the part of h's history its parent holds, and only
// that part (store/forkpart.go), checked against the parent member: the
// count of messages and user messages, their checksum and the number of
// prompt timings. A session without a parent has none.
func (s *Session) loadParent(h *Header, hpath string) (prefix, error) {
	if h.Parent == nil {
		return prefix{}, nil
	}
	return readParentPart(s.fs, s.dir, h, hpath, h.Parent.MessageCount, h.Parent.Timings, s.linesOnly, []string{h.ID})
}

// probe loads dir read-only with its chain, its lines checked but not
// decoded (no messages): a fork's source of lines and checksums. The
// caller must not write through it.
func (s *Session) probe(dir string, base bool) (*Session, error) {
	p := &Session{fs: s.fs, now: s.now, kind: onDisk, dir: dir, readOnly: errProbe, base: base, keepChain: true, linesOnly: true}
	if err := p.load(); err != nil {
		return nil, err
	}
	p.closeLogs()
	return p, nil
}

// CheckForkPoint reports ErrInvalid unless a history of msgs can be cut
// after its first k messages: 0 ≤ k ≤ len(msgs), and message k is not a
// tool result, which would separate an assistant's tool calls from their
// results.
func CheckForkPoint(msgs []convo.Message, k int) error {
	switch {
	case k < 0 || k > len(msgs):
		return fmt.Errorf("%w: messageCount %d is outside the history of %d messages", ErrInvalid, k, len(msgs))
	case k < len(msgs) && msgs[k].Role == convo.RoleToolResult:
		return fmt.Errorf("%w: messageCount %d separates an assistant's tool calls from their results", ErrInvalid, k)
	}
	return nil
}

// splitTimings cuts timings at history index k: the first t end at or
// before k and are kept whole; a timing that starts before k and ends
// after it is cut to end at k (spanning, ok true).
func splitTimings(timings []PromptTiming, k int) (t int, spanning PromptTiming, ok bool) {
	for t < len(timings) {
		tm := &timings[t]
		end := tm.MessageEndIndex
		if !end.Set {
			end = tm.MessageStartIndex
		}
		if end.Value > k {
			break
		}
		t++
	}
	if t < len(timings) {
		tm := timings[t]
		if tm.MessageStartIndex.Set && tm.MessageStartIndex.Value < k {
			tm.MessageEndIndex = Some(k)
			return t, tm, true
		}
	}
	return t, PromptTiming{}, false
}

// timingsUsage totals the model calls of timings.
func timingsUsage(timings []PromptTiming) convo.SessionUsage {
	var u convo.SessionUsage
	for i := range timings {
		u.UsageSum.Add(timings[i].Usage)
	}
	return u
}

// CheckpointAt returns the compaction checkpoint in effect for the first
// k messages of a history whose runtime records are rt: the newest one at
// or before k that no later rewind dropped; nil when there is none.
func CheckpointAt(rt []RuntimeRecord, k int) *Checkpoint {
	limit := k
	for i := len(rt) - 1; i >= 0; i-- {
		switch rt[i].Type {
		case RuntimeRewind:
			if r, ok := parseRewind(rt[i].Data); ok {
				limit = min(limit, r.MessageCount)
			}
		case RuntimeCompaction:
			if cp := parseCheckpoint(rt[i].Data); cp != nil && cp.MessageCount <= limit {
				return cp
			}
		}
	}
	return nil
}

// prefixCRC is the checksum of the lines of the session's first k
// messages: the header's for the whole history, else read from the logs
// (prefixCRCAt). Call it holding wmu.
func (s *Session) prefixCRC(k int) (uint32, error) {
	if k == s.hdr.MessageCount {
		return s.hdr.MessagesCRC, nil
	}
	return prefixCRCAt(s.fs, s.dir, &s.hdr, k)
}

// prefixCRCAt is the checksum of the lines of the first k messages of the
// session in dir whose header is h: its parent's for a part it shares
// (the parents are followed, each once: a cycle is malformed), else the
// parent part's continued over the own log's bytes before message k, read
// with one index record and no decoding. The bytes are those the header's
// checksum covers; the fork's first open checks the result against them
// whole (loadParent).
func prefixCRCAt(fs fsys.FS, dir string, h *Header, k int) (uint32, error) {
	seen := []string{h.ID}
	base := h.MessageCount - h.ownMessages()
	for k < base {
		hpath := filepath.Join(dir, headerFile)
		if slices.Contains(seen, h.Parent.SessionID) {
			return 0, malformed(hpath, "the parents form a cycle: %s → %s", strings.Join(seen, " → "), h.Parent.SessionID)
		}
		pdir, isBase := (&Session{fs: fs, dir: dir}).parentDir(h)
		ph, _, err := readPartHeader(fs, pdir, isBase)
		if err != nil {
			return 0, err
		}
		if ph.ID != h.Parent.SessionID {
			return 0, malformed(hpath, "parent %s holds session %s", pdir, ph.ID)
		}
		dir, h = pdir, &ph
		seen = append(seen, ph.ID)
		base = h.MessageCount - h.ownMessages()
	}
	switch {
	case k == h.MessageCount:
		return h.MessagesCRC, nil
	case k == base:
		return h.baseCRC(), nil
	}
	ipath, mpath := filepath.Join(dir, indexFile), filepath.Join(dir, messagesFile)
	idx, err := readAt(fs, ipath, int64(k-base)*indexRecordSize, indexRecordSize)
	if err != nil {
		return 0, err
	}
	off := readIndexRecord(idx, 0).off
	if off < 0 || off > h.MessagesBytes {
		return 0, malformed(ipath, "record %d points outside the committed range", k)
	}
	// Read a buffer at a time: the part before k may be most of a long
	// log, and only its checksum is needed.
	f, err := fs.OpenFile(mpath, os.O_RDONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", mpath, err)
	}
	defer f.Close()
	if err := checkSize(f, mpath, off); err != nil {
		return 0, err
	}
	crc, err := crcOf(f, h.baseCRC(), 0, off)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", mpath, err)
	}
	return crc, nil
}

// readAt reads n bytes of a file at off.
func readAt(fs fsys.FS, path string, off, n int64) ([]byte, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	if err := checkSize(f, path, off+n); err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return buf, nil
}

// Fork makes a new session in s's scope whose history is s's first k
// committed messages: its header names s and the part it shares, whose
// messages are not copied (docs/storage.md, "Forks and rewinds"). The new
// session has s's settings, the prompt timings of that part (one that
// runs past k cut to end there), their usage, and the compaction
// checkpoint in effect at k; title, if not empty, is its title, else
// s's. It is created whole or not at all, as any session
// (createOnDisk), and returned open for writing. s must be on disk and
// writable; k must be a place CheckForkPoint accepts.
func (s *Session) Fork(k int, title string) (*Session, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return nil, err
	}
	if s.kind != onDisk {
		return nil, fmt.Errorf("%w: session %s is not stored yet: nothing to fork", ErrInvalid, s.id)
	}
	if err := CheckForkPoint(s.msgs, k); err != nil {
		return nil, err
	}
	crc, err := s.prefixCRC(k)
	if err != nil {
		return nil, err
	}
	t, span, spans := splitTimings(s.timings, k)
	inherited := s.timings[:t:t]
	var own []TimingAt
	if spans {
		own = []TimingAt{{Index: t, Timing: span}}
	}
	next := s.forkHeader(s.nextID(), k, crc, t, title)
	next.UpdatedAt = max(s.now().UnixMilli(), next.CreatedAt)
	// The parent's calls but those of its runs past k and its own
	// background calls (titles, compactions): an import's calls, which no
	// timing holds, are the part's too.
	dropped := s.timings[t:]
	if spans {
		dropped = s.timings[t+1:]
	}
	next.Usage = convo.SessionUsage{UsageSum: s.hdr.Usage.UsageSum}
	next.Usage.UsageSum.Sub(timingsUsage(dropped).UsageSum)
	next.Usage.UsageSum.Sub(s.hdr.Usage.Title)
	next.Usage.UsageSum.Sub(s.hdr.Usage.Compaction)
	var rt []RuntimeRecord
	if cp := CheckpointAt(s.rt, k); cp != nil {
		rt = []RuntimeRecord{cp.Record()}
		next.Compaction = cp.Meta()
	}
	f, err := s.newFork(next, filepath.Join(filepath.Dir(s.dir), next.ID), s.feed)
	if err != nil {
		return nil, err
	}
	all := inherited
	if spans {
		all = append(inherited, span)
	}
	if err := f.create(s.msgs[:k:k], rt, all, own, nil, nil); err != nil {
		return nil, err
	}
	return f, nil
}

// forkHeader is the header of a new fork of s at k (crc: the checksum of
// those messages' lines; t: the timings it shares) with s's settings.
func (s *Session) forkHeader(id string, k int, crc uint32, t int, title string) Header {
	now := s.now().UnixMilli()
	h := newHeader(id, "", s.hdr.Cwd, now)
	h.Version = ForkFormatVersion
	h.WorkspaceID = clonePtr(s.hdr.WorkspaceID)
	h.Title, h.TitleSource = s.hdr.Title, s.hdr.TitleSource
	if title != "" {
		h.Title, h.TitleSource = title, TitleManual
	}
	h.Model, h.Effort, h.Permission, h.Budget = clonePtr(s.hdr.Model), s.hdr.Effort, s.hdr.Permission, s.hdr.Budget
	users := countUsers(s.msgs[:k])
	h.Parent = &ParentRef{SessionID: s.hdr.ID, MessageCount: k, UserMessageCount: users, MessagesCRC: crc, Timings: t}
	h.MessageCount, h.UserMessageCount, h.MessagesCRC = k, users, crc
	return h
}

// newFork is the handle that creates a fork (or a base) in dir.
func (s *Session) newFork(h Header, dir string, f feed) (*Session, error) {
	n := &Session{id: h.ID, fs: s.fs, now: s.now, kind: draft, dir: dir, hdr: h, feed: f, newID: s.newID}
	// The observers have the parent's part from the parent: they take
	// only what the fork adds (docs/storage.md, Search index).
	n.taken = f.taken(h.MessageCount - h.ownMessages())
	return n, nil
}

// create writes the new fork's (or base's) directory, as a draft's first
// commit does: all is its whole history and timings its whole list, of
// which it writes only its own part: lines (with their index records
// idx) when not nil, else the messages past the parent's part encoded,
// rt, and the timing writes own.
func (f *Session) create(all []convo.Message, rt []RuntimeRecord, timings []PromptTiming, own []TimingAt, lines, idx []byte) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	h := f.hdr
	var b encodedBatch
	var err error
	if lines != nil {
		b = rawBatch(lines, idx, h.baseCRC())
		if b.rt, err = encodeRuntime(rt); err != nil {
			return err
		}
	} else if b, err = encodeBatch(all[h.MessageCount-h.ownMessages():], 0, h.baseCRC(), rt); err != nil {
		return err
	}
	if b.timings, err = encodeTimings(own); err != nil {
		return err
	}
	h.MessagesBytes, h.MessagesCRC = b.size, b.crc
	h.RuntimeCount, h.RuntimeBytes = len(rt), int64(len(b.rt))
	h.RuntimeCRC = fsys.CRC32C(0, b.rt)
	h.TimingsCount, h.TimingsBytes, h.TimingsCRC = len(own), int64(len(b.timings)), fsys.CRC32C(0, b.timings)
	if err := h.validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return f.createOnDisk(all, rt, timings, h, b)
}

// rawBatch is a batch of message lines already encoded (copied from a
// log), continuing the checksum crc.
func rawBatch(lines, idx []byte, crc uint32) encodedBatch {
	b := encodedBatch{lines: lines, index: idx, size: int64(len(lines)), crc: fsys.CRC32C(crc, lines)}
	for i := 0; i*indexRecordSize < len(idx); i++ {
		if readIndexRecord(idx, i).kind == kindUser {
			b.users++
		}
	}
	return b
}

// encodeRuntime encodes runtime records as lines.
func encodeRuntime(rt []RuntimeRecord) ([]byte, error) {
	b, err := encodeBatch(nil, 0, 0, rt)
	return b.rt, err
}

// exists reports whether path names something.
func exists(fs fsys.FS, path string) bool {
	_, err := fs.Stat(path)
	return err == nil || !(errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR))
}
