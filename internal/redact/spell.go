package redact

import (
	"bytes"
	"math"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// A secret is found in every spelling by decoding, not by listing
// spellings: with a \uXXXX escape in either case for any character, a
// key of a few non-ASCII characters has hundreds of them. A view is the
// line (or another view) with one layer of encoding decoded, each of its
// bytes remembering the unit it was decoded from (an escape, or a byte
// as it is); a secret found in a view is replaced in the line by the
// units it was decoded from.
type view struct {
	b      []byte
	at     []int32 // at[k]: where in parent.b the unit b[k] was decoded from starts
	parent *view
}

// span is line[from:to].
type span struct{ from, to int }

// quoteMark stands in a JSON view for a quote that was not escaped: it
// ends a string, so no secret spelled inside one crosses it. Valid UTF-8
// never holds the byte.
const quoteMark = 0xff

// spans finds every secret of MinLen bytes or more in line, sorted and
// merged where they overlap. Every spelling of a secret with an anchor
// holds the anchor as it is, so only windows around the anchor's
// occurrences are decoded: a request body that repeats a pasted key is
// not decoded whole on every request. A secret without one is searched
// for in the whole line.
func (s *Set) spans(line []byte) []span {
	if s.unanchored {
		return merge(s.find(line))
	}
	var out []span
	for _, w := range s.windows(line) {
		for _, sp := range s.find(line[w.from:w.to]) {
			out = append(out, span{w.from + sp.from, w.from + sp.to})
		}
	}
	return merge(out)
}

// windowMargin is how far before a spelling a window starts: decoding
// from the middle of an escape misreads what lies before the next whole
// escape, and an escape escaped again takes up to 36 bytes.
const windowMargin = 2 * maxSpelling

// windows are the parts of line around each occurrence of an anchor that
// hold every spelling of its secret the occurrence is part of, merged
// where they overlap. Each starts where no backslash before it could
// escape its first byte.
func (s *Set) windows(line []byte) []span {
	reach := s.longest + windowMargin
	var ws []span
	for i := range s.long {
		a := s.long[i].anchor
		for k := 0; ; {
			j := a.index(line[k:])
			if j < 0 {
				break
			}
			p := k + j
			w := span{max(p-reach, 0), min(p+len(a.s)+reach, len(line))}
			for w.from > 0 && line[w.from-1] == '\\' {
				w.from--
			}
			ws = append(ws, w)
			k = p + 1
		}
	}
	slices.SortFunc(ws, func(a, b span) int { return a.from - b.from })
	merged := ws[:0]
	for _, w := range ws {
		if n := len(merged); n > 0 && w.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, w.to)
			continue
		}
		merged = append(merged, w)
	}
	return merged
}

// find finds every secret of MinLen bytes or more in line: as it is, in
// the line's JSON strings decoded once and twice, and percent-decoded in
// the line and in its strings. Each is widened to whole JSON escapes of
// the line.
func (s *Set) find(line []byte) []span {
	var out []span
	top := &view{b: line}
	s.search(top, &out)
	// Views count in int32: a longer line is searched as it is.
	small := len(line) <= math.MaxInt32
	var strs *view
	if small && bytes.IndexByte(line, '\\') >= 0 {
		strs = decodeJSON(top)
		s.search(strs, &out)
		if bytes.IndexByte(strs.b, '\\') >= 0 {
			s.search(decodeJSON(strs), &out)
		}
	}
	for _, v := range []*view{top, strs} {
		if v == nil || !small || bytes.IndexByte(v.b, '%') < 0 && bytes.IndexByte(v.b, '+') < 0 {
			continue
		}
		// A path writes '+' as itself, a query a space as '+'.
		s.search(decodePercent(v, false), &out)
		if s.spaced && bytes.IndexByte(v.b, '+') >= 0 {
			s.search(decodePercent(v, true), &out)
		}
	}
	if strs != nil {
		for i := range out {
			out[i] = strs.widen(out[i])
		}
	}
	return out
}

// merge sorts spans and merges those that overlap.
func merge(spans []span) []span {
	if len(spans) == 0 {
		return nil
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.from < last.to {
			last.to = max(last.to, sp.to)
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// search adds the place in the line of each secret v holds.
func (s *Set) search(v *view, out *[]span) {
	for i := range s.long {
		sec := s.long[i].s
		for k := 0; ; {
			j := bytes.Index(v.b[k:], sec)
			if j < 0 {
				break
			}
			k += j
			*out = append(*out, v.inLine(k, k+len(sec)))
			k++
		}
	}
}

// inLine maps v.b[from:to] to the bytes of the line it was decoded from.
func (v *view) inLine(from, to int) span {
	for ; v.parent != nil; v = v.parent {
		from, to = int(v.at[from]), v.unitEnd(to-1)
	}
	return span{from, to}
}

// unitEnd is where in v.parent the unit v.b[k] was decoded from ends: the
// units of a view cover its parent, one after another.
func (v *view) unitEnd(k int) int {
	for n := k + 1; n < len(v.at); n++ {
		if v.at[n] != v.at[k] {
			return int(v.at[n])
		}
	}
	return len(v.parent.b)
}

// widen grows sp, a span of v's parent, to whole units of v: a match can
// start inside an escape (a key that starts with an escape's letter, as
// "nvapi-..." does after a newline's \n, or with the hex digits a \u
// escape ends in) or end in a backslash that escapes the byte after it,
// and replacing half an escape leaves a line no JSON reader parses.
func (v *view) widen(sp span) span {
	// The last unit that starts at or before sp.from.
	k, _ := slices.BinarySearch(v.at, int32(sp.from)+1)
	if k > 0 {
		sp.from = int(v.at[k-1])
	}
	k, _ = slices.BinarySearch(v.at, int32(sp.to-1)+1)
	if k > 0 {
		sp.to = max(sp.to, v.unitEnd(k-1))
	}
	return sp
}

// decodeJSON decodes p as the inside of JSON strings: each escape becomes
// what it stands for, and a quote that is not escaped becomes quoteMark. A
// backslash that starts no escape stays as it is.
func decodeJSON(p *view) *view {
	b := p.b
	v := &view{b: make([]byte, 0, len(b)), at: make([]int32, 0, len(b)), parent: p}
	for i := 0; i < len(b); {
		c, n := b[i], 1
		switch {
		case c == '"':
			c = quoteMark
		case c == '\\' && i+1 < len(b):
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				c, n = e, 2
			case 'b':
				c, n = '\b', 2
			case 'f':
				c, n = '\f', 2
			case 'n':
				c, n = '\n', 2
			case 'r':
				c, n = '\r', 2
			case 't':
				c, n = '\t', 2
			case 'u':
				if r, m := unicodeEscape(b[i:]); m > 0 {
					start := len(v.b)
					v.b = utf8.AppendRune(v.b, r)
					for range len(v.b) - start {
						v.at = append(v.at, int32(i))
					}
					i += m
					continue
				}
			}
		}
		v.b = append(v.b, c)
		v.at = append(v.at, int32(i))
		i += n
	}
	return v
}

// unicodeEscape decodes the \uXXXX escape b starts with, and the one after
// it when the two are a surrogate pair; m is the bytes read, 0 when b
// starts with no such escape. A lone surrogate is U+FFFD.
func unicodeEscape(b []byte) (r rune, m int) {
	r1, ok := hex4(b)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(r1) {
		return r1, 6
	}
	if r2, ok := hex4(b[6:]); ok {
		if r := utf16.DecodeRune(r1, r2); r != utf8.RuneError {
			return r, 12
		}
	}
	return utf8.RuneError, 6
}

// hex4 reads the code unit of the \uXXXX escape b starts with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[2:6] {
		d, ok := hexDigit(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// decodePercent decodes p's %XX escapes (either case) and, when plus, '+'
// as a space.
func decodePercent(p *view, plus bool) *view {
	b := p.b
	v := &view{b: make([]byte, 0, len(b)), at: make([]int32, 0, len(b)), parent: p}
	for i := 0; i < len(b); {
		c, n := b[i], 1
		switch {
		case c == '+' && plus:
			c = ' '
		case c == '%':
			if i+2 < len(b) {
				hi, ok1 := hexDigit(b[i+1])
				lo, ok2 := hexDigit(b[i+2])
				if ok1 && ok2 {
					c, n = hi<<4|lo, 3
				}
			}
		}
		v.b = append(v.b, c)
		v.at = append(v.at, int32(i))
		i += n
	}
	return v
}
