package trace

import (
	"bytes"
	"hash/maphash"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
)

// A long request body comes as the value it encodes (provider.Body), so
// that no copy of the history is made to send it. Recording it must not
// make one either: addStreamedRequest reads it in pieces for what the
// record needs (the sums of its blocks, that it holds no secret) and the
// line holds the value, encoded again as it is written (longline.go).
// That is the line addRequestBytes writes for the same bytes. A patch's
// insert is gathered in a second pass; where a record needs all the bytes
// (a body to scrub, a patch of a short body's bytes) the body is made
// whole and recorded by addRequestBytes, as before.

// addStreamedRequest records a long body from its pieces and reports
// whether it did; false means the caller records it from its bytes. It
// does when it can reach addRequestBytes's decision without the body's
// bytes in memory: a body whole because there is none of its purpose to
// patch against (or one of before a break, or scrubbed with other keys),
// or because the one before is so much shorter that a patch would insert
// more than its share; a patch of a long body's sums, whose insert it
// gathers in a second pass. A body that may hold a secret, or a patch of
// a short body's bytes, it leaves to addRequestBytes.
func (w *Writer) addStreamedRequest(purpose string, r *Record, b provider.Body) bool {
	n := b.Len()
	if n <= longBody {
		return false // its head keeps its bytes
	}
	sc := w.secrets()
	breaks := w.breaks.Load()
	w.mu.Lock()
	head := w.heads[purpose]
	w.mu.Unlock()
	var base *bodyHead // the head a patch compares against
	if head != nil && head.breaks == breaks && sameKeys(head.sc, sc) {
		// A patch keeps at most the shorter body's bytes of the longer.
		kept := len(head.body)
		if head.sums != nil {
			kept = head.sums.n
		}
		if (n-min(kept, n))*maxPatchShare <= n {
			if head.sums == nil {
				return false
			}
			base = head
		}
	}
	r.T = w.now().UnixMilli()
	seed := maphash.MakeSeed()
	if base != nil {
		seed = base.sums.seed
	}
	s := newBodyScan(sc, n, seed)
	if _, err := b.WriteTo(s); err != nil || !s.end() {
		return false
	}
	var insert []byte
	prefix, suffix, patch := 0, 0, false
	if base != nil {
		var ok bool
		insert, prefix, suffix, patch, ok = s.patchOf(b, base)
		if !ok {
			return false
		}
	}

	r.Body = nil
	line, err := encodeLine(r)
	if err != nil {
		w.drop("a record could not be encoded: " + err.Error())
		return true
	}
	line = line[:len(line)-2] // without "}\n": the body's member follows
	wholeAt := len(line)
	next := &bodyHead{call: r.Call, breaks: breaks, sc: sc, whole: n, sums: s.sums()}
	if patch {
		next.whole, next.patched = base.whole, base.patched+len(insert)
		line = appendPatch(line, base.call, prefix, suffix, insert)
	} else {
		line = append(line, `,"body":`...)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.heads == nil {
		w.heads = map[string]*bodyHead{}
	}
	if w.seqs == nil {
		w.seqs = map[string]int{}
	}
	if patch && w.seqs[purpose]-base.seq >= recentBodies {
		// As in addRequestBytes: too many of its purpose landed since its
		// base for a reader to keep it.
		line, patch = append(line[:wholeAt], `,"body":`...), false
		next.whole, next.patched = n, 0
	}
	w.seqs[purpose]++
	next.seq = w.seqs[purpose]
	w.heads[purpose] = next
	if patch {
		w.addLineLocked(line, nil, false)
	} else {
		w.addLongLocked(&longLine{head: line, value: b.Value(), tail: []byte("}\n"), size: len(line) + n + 2})
	}
	return true
}

// appendPatch appends a request's bodyPatch member and the line's end.
func appendPatch(line []byte, base, prefix, suffix int, insert []byte) []byte {
	line = append(line, `,"bodyPatch":{"base":`...)
	line = strconv.AppendInt(line, int64(base), 10)
	line = append(line, `,"prefix":`...)
	line = strconv.AppendInt(line, int64(prefix), 10)
	line = append(line, `,"suffix":`...)
	line = strconv.AppendInt(line, int64(suffix), 10)
	line = append(line, `,"insert":`...)
	line = appendJSONString(line, insert)
	return append(line, "}}\n"...)
}

// patchOf is patchOf's decision for a body read by s, against base's
// sums (the same seed as s's): the common ends from the sums of their
// blocks (bodyHead.commonEnds), then, in a second pass over the body,
// the bytes between them and the few around their ends that cut them
// back to whole characters. patch false: the body is whole. ok false:
// the second pass failed.
func (s *bodyScan) patchOf(b provider.Body, base *bodyHead) (insert []byte, prefix, suffix int, patch, ok bool) {
	sums, n := base.sums, s.n
	common := min(sums.n, n)
	p0 := 0
	for k := 0; p0+sumBlock <= common && s.sumsF[k] == sums.front[k]; k++ {
		p0 += sumBlock
	}
	// Cutting back to a character start moves the prefix down by fewer
	// than utf8.UTFMax bytes, and the suffix counted after it gains at
	// most a block: the bytes needed lie in [lo, hi).
	least := s.suffixOf(sums, common-p0)
	if (n-p0-least-sumBlock)*maxPatchShare > n {
		return nil, 0, 0, false, true
	}
	lo, hi := max(p0-utf8.UTFMax, 0), min(n-least+utf8.UTFMax, n)
	win := &windowWriter{lo: lo, hi: hi, b: make([]byte, 0, hi-lo)}
	if _, err := b.WriteTo(win); err != nil || len(win.b) != hi-lo {
		return nil, 0, 0, false, false
	}
	inside := func(i int) bool { return lo <= i && i < hi }
	prefix = p0
	for prefix > 0 && prefix < n {
		if !inside(prefix) {
			return nil, 0, 0, false, false
		}
		if utf8.RuneStart(win.b[prefix-lo]) {
			break
		}
		prefix--
	}
	suffix = s.suffixOf(sums, common-prefix)
	for suffix > 0 {
		if !inside(n - suffix) {
			return nil, 0, 0, false, false
		}
		if utf8.RuneStart(win.b[n-suffix-lo]) {
			break
		}
		suffix--
	}
	if prefix < lo || n-suffix > hi || prefix > n-suffix {
		return nil, 0, 0, false, false
	}
	insert = win.b[prefix-lo : n-suffix-lo]
	if len(insert)*maxPatchShare > n || base.patched+len(insert) >= base.whole || !utf8.Valid(insert) {
		return nil, 0, 0, false, true
	}
	return insert, prefix, suffix, true, true
}

// suffixOf counts the bytes of the whole blocks at the body's end whose
// sums are those of sums' body, in the last room bytes.
func (s *bodyScan) suffixOf(sums *blockSums, room int) int {
	end := len(s.sumsB)
	suffix := 0
	for k := 0; suffix+sumBlock <= room && s.sumsB[end-1-k] == sums.end[k]; k++ {
		suffix += sumBlock
	}
	return suffix
}

// windowWriter keeps the bytes written at [lo, hi) of what it is written.
type windowWriter struct {
	lo, hi, off int
	b           []byte
}

func (w *windowWriter) Write(p []byte) (int, error) {
	from, to := max(w.lo-w.off, 0), min(w.hi-w.off, len(p))
	if from < to {
		w.b = append(w.b, p[from:to]...)
	}
	w.off += len(p)
	return len(p), nil
}

// bodyScan reads a body's pieces for what a whole record of it needs:
// that it is a JSON object on one line (else it is kept as text), that
// no secret of sc may lie in it (else it is scrubbed whole), and the
// sums of its blocks (sumsOf).
type bodyScan struct {
	sc   *redact.Set
	n    int // the body's length, known before its bytes
	seen int
	bad  bool
	// held is the end of what was seen, which a secret's spelling may run
	// on from into the next piece.
	held []byte
	// front and back gather the block being summed, counted from the
	// body's start and from its end.
	front, back  []byte
	sumsF, sumsB []uint64
	seed         maphash.Seed
}

func newBodyScan(sc *redact.Set, n int, seed maphash.Seed) *bodyScan {
	return &bodyScan{sc: sc, n: n, seed: seed,
		front: make([]byte, 0, sumBlock), back: make([]byte, 0, sumBlock)}
}

func (s *bodyScan) Write(p []byte) (int, error) {
	if s.seen == 0 && len(p) > 0 && p[0] != '{' {
		s.bad = true
	}
	if bytes.IndexByte(p, '\n') >= 0 {
		s.bad = true
	}
	if !s.sc.Empty() && !s.bad {
		s.held = append(s.held, p...)
		if s.sc.MayHold(s.held) {
			s.bad = true
		}
		keep := min(len(s.held), s.sc.Longest())
		s.held = append(s.held[:0], s.held[len(s.held)-keep:]...)
	}
	s.sumsFrom(p)
	s.seen += len(p)
	return len(p), nil
}

// sumsFrom sums p's whole blocks: those that start at a multiple of
// sumBlock from the body's start, and those that end at one from its end.
func (s *bodyScan) sumsFrom(p []byte) {
	for i := 0; i < len(p); {
		k := min(len(p)-i, sumBlock-len(s.front))
		s.front = append(s.front, p[i:i+k]...)
		if len(s.front) == sumBlock {
			s.sumsF = append(s.sumsF, maphash.Bytes(s.seed, s.front))
			s.front = s.front[:0]
		}
		i += k
	}
	// Back blocks: the body's first n%sumBlock bytes belong to none.
	skip := max(s.n%sumBlock-s.seen, 0)
	for i := min(skip, len(p)); i < len(p); {
		k := min(len(p)-i, sumBlock-len(s.back))
		s.back = append(s.back, p[i:i+k]...)
		if len(s.back) == sumBlock {
			s.sumsB = append(s.sumsB, maphash.Bytes(s.seed, s.back))
			s.back = s.back[:0]
		}
		i += k
	}
}

// end reports whether the body read was whole, exactly its length, and
// may be recorded from its pieces.
func (s *bodyScan) end() bool { return !s.bad && s.seen == s.n }

// sums are the body's blockSums, as sumsOf would make them.
func (s *bodyScan) sums() *blockSums {
	end := slices.Clone(s.sumsB)
	slices.Reverse(end)
	return &blockSums{seed: s.seed, n: s.n, front: s.sumsF, end: end}
}
