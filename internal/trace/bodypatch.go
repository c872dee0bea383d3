package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"unicode/utf8"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
)

// A model request repeats the whole history, so recording each body whole
// would make a trace grow with the square of a session's length (and cost
// each prompt the copy, scrub and write of everything the session holds).
// A request is instead recorded as a patch of the previous body of the
// same purpose (docs/traces.md, "Request bodies"): what it keeps of that
// body's start and end, and the bytes in between. A body is recorded whole
// when its purpose has none before it in this process, when a segment was
// closed or records were lost since (so that a segment that survives its
// older ones, or a trace after a failing disk, is readable
// after its first whole body), when the patch would not be much smaller,
// and when the patches since the last whole body add up to that body's
// size: whole bodies then come at sizes that double, so what a trace
// writes stays proportional to what the session adds, and a damaged patch
// spoils a bounded run of bodies.

// BodyPatch is a request body told as a change of an earlier one: the body
// of the last request of call Base, its first Prefix and last Suffix bytes
// kept, Insert between them.
type BodyPatch struct {
	Base   int    `json:"base"`
	Prefix int    `json:"prefix"`
	Suffix int    `json:"suffix"`
	Insert string `json:"insert"`
}

// bodyHead is the last body recorded for a purpose.
type bodyHead struct {
	call int
	// body is the body as the trace holds it (scrubbed); a long one is
	// kept as sums of its blocks instead: the body holds the whole
	// history, and keeping it would keep a second copy of a long
	// session (a 50 MB prompt) for as long as the session is open.
	body   []byte
	sums   *blockSums
	breaks int64 // the writer's breaks when it was recorded
	// sc scrubbed it. The flusher scrubs the line again with the keys of
	// when it writes it: after they changed, the body the trace holds
	// may differ from this one, so the next is whole.
	sc      *redact.Set
	whole   int // the size of the last body recorded whole
	patched int // bytes inserted by patches since then
	seq     int // its place among its purpose's requests (Writer.seqs)
}

// maxPatchShare: a patch inserting more than this share of its body is
// recorded whole instead.
const maxPatchShare = 2

// addRequest records a request (r without its body) and its body: whole,
// or as a patch of the last body of the call's purpose. A long body kept
// as its value is read in pieces when it can be (bodystream.go), else
// made whole here.
func (w *Writer) addRequest(purpose string, r *Record, b provider.Body) {
	if b.Long() && w.addStreamedRequest(purpose, r, b) {
		return
	}
	w.addRequestBytes(purpose, r, b.Bytes())
}

// addRequestBytes is addRequest with the body's bytes.
func (w *Writer) addRequestBytes(purpose string, r *Record, body []byte) {
	r.T = w.now().UnixMilli()
	sc := w.secrets()
	if len(body) == 0 || body[0] != '{' || bytes.IndexByte(body, '\n') >= 0 {
		// Not a JSON object: kept as text, whole; the next body is whole too.
		w.mu.Lock()
		delete(w.heads, purpose)
		if w.seqs == nil {
			w.seqs = map[string]int{}
		}
		w.seqs[purpose]++
		w.mu.Unlock()
		r.Body = body
		w.Add(r)
		return
	}
	w.mu.Lock()
	head := w.heads[purpose]
	w.mu.Unlock()

	r.Body = nil
	line, err := encodeLine(r)
	if err != nil {
		w.drop("a record could not be encoded: " + err.Error())
		return
	}
	line = line[:len(line)-2] // without "}\n": the body's member follows

	stored, prefix, suffix, ok := patchOf(sc, head, body, w.breaks.Load())
	next := &bodyHead{call: r.Call, breaks: w.breaks.Load(), sc: sc, whole: len(stored)}
	if len(stored) > longBody {
		next.sums = sumsOf(stored)
	} else {
		next.body = stored
	}
	var tail []byte
	whole := len(line) // the line up to the body's member
	if ok {
		insert := stored[prefix : len(stored)-suffix]
		next.whole, next.patched = head.whole, head.patched+len(insert)
		line = appendPatch(line, head.call, prefix, suffix, insert)
	} else {
		line = append(line, `,"body":`...)
		tail = stored
	}
	// The body becomes its purpose's base and its line goes into the
	// buffer at once: a call that patches against it (calls of one purpose
	// may overlap: a background title and one asked for) can only add its
	// line after this one. Two that read the same base both patch it, and
	// a reader keeps a few bodies a purpose (recentBodies).
	w.mu.Lock()
	if w.heads == nil {
		w.heads = map[string]*bodyHead{}
	}
	if w.seqs == nil {
		w.seqs = map[string]int{}
	}
	if ok && w.seqs[purpose]-head.seq >= recentBodies {
		// Requests of the purpose that overlapped this one landed since
		// its base, more than a reader keeps: the body goes whole.
		line, tail = append(line[:whole], `,"body":`...), stored
		next.whole, next.patched = len(stored), 0
	}
	w.seqs[purpose]++
	next.seq = w.seqs[purpose]
	w.heads[purpose] = next
	if len(tail) >= longPart {
		// The body waits as it is: the caller never changes it.
		w.addLongLocked(&longLine{head: line, raw: tail, tail: []byte("}\n"), size: len(line) + len(tail) + 2})
	} else {
		w.addLineLocked(line, tail, false)
	}
	w.mu.Unlock()
}

// patchOf returns the body as the trace will hold it (scrubbed of sc's
// secrets) and, when ok, the bytes of head's body its start and end keep.
// It reads the body once for the common prefix and suffix and scrubs only
// what lies between them and a secret's length around: the rest equals
// head's body, which holds no secret.
func patchOf(sc *redact.Set, head *bodyHead, body []byte, breaks int64) (stored []byte, prefix, suffix int, ok bool) {
	if head == nil || head.breaks != breaks || !sameKeys(head.sc, sc) {
		return scrubbed(sc, body), 0, 0, false
	}
	prefix, suffix = head.commonEnds(body)
	if !sc.Empty() {
		span := sc.Longest()
		from, to := max(prefix-span, 0), min(len(body)-suffix+span, len(body))
		// The window starts where a backslash of the body cannot escape
		// its first byte, so that it reads the body's escapes as they are.
		for from > 0 && body[from-1] == '\\' {
			from--
		}
		if _, changed := sc.Scrub(body[from:to]); changed {
			body = scrubbed(sc, body)
			prefix, suffix = head.commonEnds(body)
		}
	}
	insert := len(body) - prefix - suffix
	if insert*maxPatchShare > len(body) || head.patched+insert >= head.whole || !utf8.Valid(body[prefix:len(body)-suffix]) {
		return scrubbed(sc, body), 0, 0, false
	}
	return body, prefix, suffix, true
}

// sameKeys reports whether a and b scrub the same keys (a Secrets func
// may build its set anew on every call).
func sameKeys(a, b *redact.Set) bool { return a.Equal(b) }

// longBody is the size from which a body's head keeps sums of its blocks
// instead of its bytes.
const longBody = 1 << 20

// sumBlock is the size of the blocks a long body's head keeps sums of: a
// patch of such a body keeps only whole blocks of it, inserting up to two
// blocks more than a patch of its bytes would.
const sumBlock = 1 << 10

// blockSums are the sums of a body's whole blocks counted from its start
// and from its end: what commonEnds needs of it, 1.6% of its size.
type blockSums struct {
	seed       maphash.Seed
	n          int
	front, end []uint64
}

func sumsOf(b []byte) *blockSums {
	s := &blockSums{seed: maphash.MakeSeed(), n: len(b)}
	for i := 0; i+sumBlock <= len(b); i += sumBlock {
		s.front = append(s.front, maphash.Bytes(s.seed, b[i:i+sumBlock]))
		s.end = append(s.end, maphash.Bytes(s.seed, b[len(b)-i-sumBlock:len(b)-i]))
	}
	return s
}

// commonEnds is commonEnds of the head's body and b: for a long body, of
// the blocks whose sums are b's (64-bit sums: a false match is some 2^-64
// a block).
func (h *bodyHead) commonEnds(b []byte) (prefix, suffix int) {
	if h.sums == nil {
		return commonEnds(h.body, b)
	}
	s := h.sums
	n := min(s.n, len(b))
	for k := 0; prefix+sumBlock <= n && maphash.Bytes(s.seed, b[prefix:prefix+sumBlock]) == s.front[k]; k++ {
		prefix += sumBlock
	}
	for prefix > 0 && prefix < len(b) && !utf8.RuneStart(b[prefix]) {
		prefix--
	}
	n -= prefix
	for k := 0; suffix+sumBlock <= n && maphash.Bytes(s.seed, b[len(b)-suffix-sumBlock:len(b)-suffix]) == s.end[k]; k++ {
		suffix += sumBlock
	}
	for suffix > 0 && !utf8.RuneStart(b[len(b)-suffix]) {
		suffix--
	}
	return prefix, suffix
}

// commonEnds returns how many bytes a and b share at their start and, in
// what is left of both, at their end, each cut back to the start of a
// UTF-8 sequence so that what lies between is whole characters.
func commonEnds(a, b []byte) (prefix, suffix int) {
	n := min(len(a), len(b))
	// Whole blocks first: bytes.Equal is the machine's memcmp; then
	// eight bytes at a time, then one.
	const block = 256
	for prefix+block <= n && bytes.Equal(a[prefix:prefix+block], b[prefix:prefix+block]) {
		prefix += block
	}
	for prefix+8 <= n && binary.LittleEndian.Uint64(a[prefix:]) == binary.LittleEndian.Uint64(b[prefix:]) {
		prefix += 8
	}
	for prefix < n && a[prefix] == b[prefix] {
		prefix++
	}
	for prefix > 0 && prefix < len(b) && !utf8.RuneStart(b[prefix]) {
		prefix--
	}
	n -= prefix
	for suffix+block <= n && bytes.Equal(a[len(a)-suffix-block:len(a)-suffix], b[len(b)-suffix-block:len(b)-suffix]) {
		suffix += block
	}
	for suffix+8 <= n && binary.LittleEndian.Uint64(a[len(a)-suffix-8:]) == binary.LittleEndian.Uint64(b[len(b)-suffix-8:]) {
		suffix += 8
	}
	for suffix < n && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	for suffix > 0 && !utf8.RuneStart(b[len(b)-suffix]) {
		suffix--
	}
	return prefix, suffix
}

// apply rebuilds a body from its base.
func (p *BodyPatch) apply(base []byte) ([]byte, error) {
	if p.Prefix < 0 || p.Suffix < 0 || p.Prefix > len(base) || p.Suffix > len(base)-p.Prefix {
		return nil, fmt.Errorf("its patch keeps %d and %d bytes of a %d-byte body", p.Prefix, p.Suffix, len(base))
	}
	out := make([]byte, 0, p.Prefix+len(p.Insert)+p.Suffix)
	out = append(out, base[:p.Prefix]...)
	out = append(out, p.Insert...)
	return append(out, base[len(base)-p.Suffix:]...), nil
}

// Bodies rebuilds the request bodies of a trace read back, in the order of
// its records, holding only the last few bodies of each purpose: the
// bodies of a long session add up to far more than its trace.
type Bodies struct {
	t      *Trace
	next   int                  // t.Records[:next] were seen
	calls  map[int]string       // call number -> purpose
	recent map[string][]rebuilt // per purpose, newest last
}

type rebuilt struct {
	index int // in t.Records
	call  int
	body  []byte
	err   error
}

// recentBodies is how many bodies of a purpose a patch may refer back to:
// the writer's base is the last one unless calls of one purpose overlap
// (addRequest), and a reader may be asked for bodies out of order.
const recentBodies = 4

// Bodies returns the rebuilder of t's request bodies.
func (t *Trace) Bodies() *Bodies { return &Bodies{t: t} }

// Of returns the body of t.Records[i], a request: its exact bytes (a body
// kept as text included), or an error when its patch's base is not in the
// trace (a segment the size bound dropped held it) or does not fit.
func (b *Bodies) Of(i int) ([]byte, error) {
	if i < 0 || i >= len(b.t.Records) || b.t.Records[i].Type != TypeRequest {
		return nil, fmt.Errorf("record %d is not a request", i)
	}
	if i < b.next {
		if r, ok := b.find(i); ok {
			return r.body, r.err
		}
		b.next, b.calls, b.recent = 0, nil, nil // asked again for an old one: start over
	}
	if b.calls == nil {
		b.calls, b.recent = map[int]string{}, map[string][]rebuilt{}
	}
	for ; b.next <= i; b.next++ {
		rec := &b.t.Records[b.next]
		switch rec.Type {
		case TypeCall:
			b.calls[rec.Call] = rec.Purpose
		case TypeRequest:
			purpose := b.calls[rec.Call]
			r := rebuilt{index: b.next, call: rec.Call}
			r.body, r.err = b.rebuild(purpose, rec)
			list := append(b.recent[purpose], r)
			if len(list) > recentBodies {
				list = list[1:]
			}
			b.recent[purpose] = list
		}
	}
	r, _ := b.find(i)
	return r.body, r.err
}

func (b *Bodies) rebuild(purpose string, rec *Record) ([]byte, error) {
	switch {
	case rec.BodyPatch == nil && rec.BodyText != "":
		return []byte(rec.BodyText), nil
	case rec.BodyPatch == nil:
		return rec.Body, nil
	}
	list := b.recent[purpose]
	for k := len(list) - 1; k >= 0; k-- {
		if list[k].call == rec.BodyPatch.Base && list[k].err == nil {
			body, err := rec.BodyPatch.apply(list[k].body)
			if err != nil {
				return nil, fmt.Errorf("request of call %d: %w", rec.Call, err)
			}
			return body, nil
		}
	}
	return nil, fmt.Errorf("request of call %d: its body is a patch of call %d's, which the trace no longer holds", rec.Call, rec.BodyPatch.Base)
}

func (b *Bodies) find(i int) (rebuilt, bool) {
	for _, list := range b.recent {
		for _, r := range list {
			if r.index == i {
				return r, true
			}
		}
	}
	return rebuilt{}, false
}
