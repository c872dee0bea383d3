package trace

import (
	"bytes"
	"hash/maphash"
	"slices"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
)

// A long request body comes as the value it encodes (provider.Body), so
// that no copy of the history is made to send it. Recording it must not
// make one either: addStreamedRequest reads it in pieces for what the
// record needs (the sums of its blocks, that it holds no secret) and the
// line holds the value, encoded again as it is written (longline.go).
// That is the line addRequestBytes writes for the same bytes. Where a
// record needs the bytes themselves (a patch's insert, a body to scrub),
// the body is made whole and recorded by addRequestBytes, as before.

// addStreamedRequest records a long body recorded whole, from its pieces,
// and reports whether it did; false means the caller records it from its
// bytes. A body is whole when addRequestBytes would make it so without
// looking at its bytes: no body of its purpose to patch against (or one
// of before a break, or scrubbed with other keys), or one so much shorter
// that a patch would insert more than its share.
func (w *Writer) addStreamedRequest(purpose string, r *Record, b provider.Body) bool {
	n := b.Len()
	if n <= longBody {
		return false // its head keeps its bytes: addRequestBytes
	}
	sc := w.secrets()
	breaks := w.breaks.Load()
	w.mu.Lock()
	head := w.heads[purpose]
	w.mu.Unlock()
	if head != nil && head.breaks == breaks && sameKeys(head.sc, sc) {
		// A patch keeps at most the shorter body's bytes of the longer.
		kept := n
		if head.sums != nil {
			kept = head.sums.n
		} else {
			kept = len(head.body)
		}
		if (n-min(kept, n))*maxPatchShare <= n {
			return false
		}
	}
	r.T = w.now().UnixMilli()
	s := newBodyScan(sc, n)
	if _, err := b.WriteTo(s); err != nil || !s.end() {
		return false
	}
	r.Body = nil
	line, err := encodeLine(r)
	if err != nil {
		w.drop("a record could not be encoded: " + err.Error())
		return true
	}
	line = append(line[:len(line)-2], `,"body":`...) // without "}\n": the body's member follows
	next := &bodyHead{call: r.Call, breaks: breaks, sc: sc, whole: n, sums: s.sums()}
	w.mu.Lock()
	if w.heads == nil {
		w.heads = map[string]*bodyHead{}
	}
	if w.seqs == nil {
		w.seqs = map[string]int{}
	}
	w.seqs[purpose]++
	next.seq = w.seqs[purpose]
	w.heads[purpose] = next
	w.addLongLocked(&longLine{head: line, value: b.Value(), tail: []byte("}\n"), size: len(line) + n + 2})
	w.mu.Unlock()
	return true
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

func newBodyScan(sc *redact.Set, n int) *bodyScan {
	return &bodyScan{sc: sc, n: n, seed: maphash.MakeSeed(),
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
