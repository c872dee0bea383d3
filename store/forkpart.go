package store

import (
	"bytes"
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

// A fork reads of its parent only the part it shares (docs/storage.md,
// "Forks and rewinds"): the parent's first parent.messageCount index
// records, the bytes of messages.jsonl they point to, and its timings
// folded from timings.jsonl with only the first parent.timings decoded.
// Opening a fork of a long session's first prompt then costs what that
// prompt does, not the parent's whole later history (the fork a rewind to
// the start keeps is one, once its session has gone on). The parent's part is checked against the fork's
// parent member (count, user messages, checksum, timings), so reading less
// of the parent checks no less of what the fork holds.
//
// The parents of a chain are read one after the other, each with no file
// open while the next is read, and each id once: parents that name each
// other in a cycle (headers edited by hand) are malformed, not an endless
// recursion.

// partRead is what readPart read of a session: its header, the lines of
// its first messages (and the messages, unless only lines were asked
// for), its first timings and how many timings it holds (-1: not read).
type partRead struct {
	hdr      Header
	chain    *chain
	msgs     []convo.Message
	timings  []PromptTiming
	ntimings int
}

// readParentPart reads the first k messages and the first t timings of
// the parent of the session in dir whose header is h (read from hpath): k
// and t at most its parent member's. seen holds the ids of the sessions
// the read came through, h's last. The part is checked against the parent
// member as far as it was read: the whole part when k is its message
// count; a shorter one is checked by the fork whose member names it.
func readParentPart(fs fsys.FS, dir string, h *Header, hpath string, k, t int, linesOnly bool, seen []string) (prefix, error) {
	ref := h.Parent
	if slices.Contains(seen, ref.SessionID) {
		return prefix{}, malformed(hpath, "the parents form a cycle: %s → %s", strings.Join(seen, " → "), ref.SessionID)
	}
	pdir, isBase := (&Session{fs: fs, dir: dir}).parentDir(h)
	ph, legacy, err := readPartHeader(fs, pdir, isBase)
	if errors.Is(err, ErrSessionNotFound) {
		return prefix{}, malformed(hpath, "parent session %s is missing", ref.SessionID)
	}
	if err != nil {
		return prefix{}, fmt.Errorf("parent of %s: %w", h.ID, err)
	}
	switch {
	case ph.ID != ref.SessionID:
		return prefix{}, malformed(hpath, "parent %s holds session %s", pdir, ph.ID)
	case ph.MessageCount < ref.MessageCount:
		return prefix{}, malformed(hpath, "parent %s holds %d messages, the fork starts with %d", ref.SessionID, ph.MessageCount, ref.MessageCount)
	}
	p, err := readPart(fs, pdir, &ph, legacy, k, t, linesOnly, append(seen[:len(seen):len(seen)], ph.ID))
	if err != nil {
		return prefix{}, fmt.Errorf("parent of %s: %w", h.ID, err)
	}
	if k == ref.MessageCount {
		switch {
		case p.chain.crcAt(k) != ref.MessagesCRC:
			return prefix{}, malformed(hpath, "parent %s's first %d messages are not those the fork starts with", ref.SessionID, k)
		case p.chain.usersAt(k) != ref.UserMessageCount:
			return prefix{}, malformed(hpath, "parent.userMessageCount %d, the parent's part holds %d", ref.UserMessageCount, p.chain.usersAt(k))
		}
	}
	if p.ntimings >= 0 && p.ntimings < ref.Timings {
		return prefix{}, malformed(hpath, "parent %s holds %d prompt timings, the fork starts with %d", ref.SessionID, p.ntimings, ref.Timings)
	}
	pre := prefix{timings: p.timings[:t:t], chain: p.chain}
	if !linesOnly {
		pre.msgs = p.msgs[:k:k]
	}
	return pre, nil
}

// readPartHeader reads the header of the session in dir (a fork's base
// when base), and the timings an old header holds.
func readPartHeader(fs fsys.FS, dir string, base bool) (Header, []PromptTiming, error) {
	hpath := filepath.Join(dir, headerFile)
	data, err := fs.ReadFile(hpath)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return Header{}, nil, fmt.Errorf("%w: %s", ErrSessionNotFound, dir)
	}
	if err != nil {
		return Header{}, nil, fmt.Errorf("read %s: %w", hpath, err)
	}
	h, legacy, err := parseHeaderTimings(data, hpath)
	if errors.Is(err, ErrUnsupportedFormat) {
		return Header{}, nil, fmt.Errorf("%w: %w", ErrSessionNotFound, err)
	}
	if err != nil {
		return Header{}, nil, err
	}
	if !base {
		if err := checkPlace(&h, dir, hpath); err != nil {
			return Header{}, nil, err
		}
	}
	return h, legacy, nil
}

// readPart reads the first k messages (k at most h's count) and the first
// t timings of the session in dir whose header is h: its own parent's
// part first (with no file open), then the index records of its own
// messages among the first k, the bytes of messages.jsonl they point to,
// and, when t > 0, timings.jsonl's committed range, whose lines are
// folded but decoded only for the first t timings.
func readPart(fs fsys.FS, dir string, h *Header, legacy []PromptTiming, k, t int, linesOnly bool, seen []string) (partRead, error) {
	hpath := filepath.Join(dir, headerFile)
	base := h.MessageCount - h.ownMessages()
	p := partRead{hdr: *h, ntimings: -1}
	known, count := legacy[:min(len(legacy), t)], len(legacy)
	var sub prefix
	if h.Parent != nil {
		var err error
		if sub, err = readParentPart(fs, dir, h, hpath, min(k, base), min(t, h.Parent.Timings), linesOnly, seen); err != nil {
			return partRead{}, err
		}
		known, count = sub.timings, h.Parent.Timings
	}
	p.chain, p.msgs = sub.chain, sub.msgs
	if p.chain == nil {
		p.chain = &chain{}
	}
	if own := k - base; own > 0 {
		ipath, mpath := filepath.Join(dir, indexFile), filepath.Join(dir, messagesFile)
		idx, err := readPartFile(fs, ipath, int64(own)*indexRecordSize)
		if err != nil {
			return partRead{}, err
		}
		last := readIndexRecord(idx, own-1)
		end := last.off + int64(last.n)
		if last.off < 0 || end > h.MessagesBytes {
			return partRead{}, malformed(ipath, "record %d points outside the committed range", k-1)
		}
		mdata, err := readPartFile(fs, mpath, end)
		if err != nil {
			return partRead{}, err
		}
		if linesOnly {
			err = checkLines(mdata, base, own, idx, mpath, ipath)
		} else {
			var msgs []convo.Message
			if msgs, err = parseMessages(mdata, base, own, idx, mpath, ipath); err == nil {
				p.msgs = msgs
				if sub.msgs != nil {
					p.msgs = append(sub.msgs, msgs...)
				}
			}
		}
		if err != nil {
			return partRead{}, err
		}
		var baseUsers int
		if h.Parent != nil {
			baseUsers = h.Parent.UserMessageCount
		}
		p.chain = &chain{parent: sub.chain, base: base, baseUsers: baseUsers, baseCRC: h.baseCRC(), own: mdata, idx: idx, crc: fsys.CRC32C(h.baseCRC(), mdata)}
	}
	if t > 0 {
		fold := timingsFold{out: known, n: count, t: t, file: filepath.Join(dir, timingsFile)}
		if err := fold.read(fs, h.TimingsBytes, h.TimingsCount, h.TimingsCRC); err != nil {
			return partRead{}, err
		}
		p.timings, p.ntimings = fold.out, fold.n
	}
	return p, nil
}

// readPartFile reads the first n bytes of one of a session's logs, which
// the header says it holds.
func readPartFile(fs fsys.FS, path string, n int64) ([]byte, error) {
	data, err := readAt(fs, path, 0, n)
	if errors.Is(err, os.ErrNotExist) {
		return nil, malformed(path, "missing")
	}
	return data, err
}

// timingsFold folds the lines of timings.jsonl as parseTimings does,
// over a list of n timings of which out holds the first min(n, t), and
// keeps only those first ones: only lines that write one of them are
// decoded; the others are read for their index and whether they are a
// cut.
type timingsFold struct {
	out  []PromptTiming // len(out) == min(n, t) throughout
	n, t int
	file string
}

// timingsChunk is how much of timings.jsonl a fold reads at a time.
const timingsChunk = 64 << 10

// read folds the committed range of the log, size bytes holding exactly
// lines lines whose checksum is crc, reading it a buffer at a time: a
// fork of a long session's first prompt keeps no copy of the parent's
// later timings.
func (fd *timingsFold) read(fs fsys.FS, size int64, lines int, crc uint32) error {
	if size == 0 && lines == 0 && crc == 0 {
		return nil // a log that sessions written before it lack reads as nothing
	}
	f, err := fs.OpenFile(fd.file, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return malformed(fd.file, "missing")
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", fd.file, err)
	}
	defer f.Close()
	if err := checkSize(f, fd.file, size); err != nil {
		return err
	}
	buf := make([]byte, min(size, timingsChunk))
	var sum uint32
	var off int64
	pending, line := 0, 0 // the bytes of a line begun in the last read; the lines folded
	for off < size {
		if pending == len(buf) { // a line longer than the buffer
			buf = append(buf, make([]byte, len(buf))...)
		}
		k := int(min(int64(len(buf)-pending), size-off))
		if _, err := f.ReadAt(buf[pending:pending+k], off); err != nil {
			return fmt.Errorf("read %s: %w", fd.file, err)
		}
		sum = fsys.CRC32C(sum, buf[pending:pending+k])
		off += int64(k)
		data := buf[:pending+k]
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			if line++; line > lines {
				return malformed(fd.file, "committed range holds more than %d lines", lines)
			}
			if err := fd.line(data[:i+1], line); err != nil {
				return err
			}
			data = data[i+1:]
		}
		pending = copy(buf, data)
	}
	switch {
	case pending > 0:
		return malformed(fd.file, "line %d of the committed range has no newline", line+1)
	case line != lines:
		return malformed(fd.file, "committed range holds %d lines, header says %d", line, lines)
	case sum != crc:
		return malformed(fd.file, "checksum %08x of the committed range, header says %08x", sum, crc)
	}
	return nil
}

// line folds line number no, l.
func (fd *timingsFold) line(l []byte, no int) error {
	var tm PromptTiming
	index, cut, ok := timingLineHead(l)
	if !ok || (!cut && index >= 0 && index < fd.t) {
		w, c, err := parseTimingLine(l, no, fd.file)
		if err != nil {
			return err
		}
		index, cut, tm = w.Index, c, w.Timing
	}
	if cut {
		if index < 0 || index > fd.n {
			return malformed(fd.file, "line %d: cut at %d of %d timings", no, index, fd.n)
		}
		fd.n = index
		k := min(len(fd.out), index)
		fd.out = fd.out[:k:k]
		return nil
	}
	switch {
	case index == fd.n:
		fd.n++
		if index < fd.t {
			fd.out = append(fd.out, tm)
		}
	case index >= 0 && index < fd.n:
		if index < fd.t {
			fd.out[index] = tm
		}
	default:
		return malformed(fd.file, "line %d: index %d with %d timings before it", no, index, fd.n)
	}
	return nil
}

// timingLineHead reads a timings.jsonl line's index, and whether it is a
// cut, without decoding its timing: for a line that begins {"index":N,
// (as Loop writes them), is one JSON object, and has no other member that
// encoding/json would read as its index or cut (a name that matches them
// in any case; any name with an escape or a byte past ASCII is taken to).
// ok is false for any other line, which the caller decodes whole.
func timingLineHead(l []byte) (index int, cut, ok bool) {
	const head = `{"index":`
	if !bytes.HasPrefix(l, []byte(head)) {
		return 0, false, false
	}
	i := len(head)
	for i < len(l) && i-len(head) < 9 && '0' <= l[i] && l[i] <= '9' {
		index = index*10 + int(l[i]-'0')
		i++
	}
	if i == len(head) || i >= len(l) || l[i] != ',' || (l[len(head)] == '0' && i > len(head)+1) {
		return 0, false, false // no digits, too many, or a leading zero JSON refuses
	}
	rest := l[i+1:]
	if string(rest) == `"cut":true}`+"\n" {
		return index, true, true
	}
	if !plainMembers(rest) {
		return 0, false, false
	}
	return index, false, true
}

// plainMembers reports whether b is the rest of a JSON object after a
// member and its comma, "name":value,…}, followed by a newline, whose
// member names are plain ASCII without escapes and none of them index or
// cut in any case. The values are skipped, not checked. It allocates
// nothing.
func plainMembers(b []byte) bool {
	i := 0
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(b) && b[end] != '"' {
			if c := b[end]; c == '\\' || c >= 0x80 {
				return false
			}
			end++
		}
		if end >= len(b) {
			return false
		}
		name := b[i+1 : end]
		if (len(name) == 5 && bytes.EqualFold(name, []byte("index"))) || (len(name) == 3 && bytes.EqualFold(name, []byte("cut"))) {
			return false
		}
		i = end + 1
		if i >= len(b) || b[i] != ':' {
			return false
		}
		if i = skipValue(b, i+1); i < 0 {
			return false
		}
		switch b[i] {
		case ',':
			i++
			continue
		case '}':
			return string(b[i+1:]) == "\n"
		}
		return false // a closing bracket
	}
}

// skipValue returns the index of the comma or closing brace that ends
// the JSON value starting at b[i], or -1. It tells values apart, nested
// ones and strings with their escapes included, without checking them.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				return -1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		case '\n':
			return -1
		}
	}
	return -1
}
