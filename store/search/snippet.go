package search

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf16"
)

// makeSnippet cuts the excerpt around the first match and returns it with
// every match inside it; ok is false when some term does not occur.
func makeSnippet(v foldedView, terms []searchTerm) (string, []Range, bool) {
	type span struct{ s, e int } // runes of v.disp
	var spans []span
	for _, t := range terms {
		found := false
		for off := 0; off < len(v.text); {
			j := bytes.Index(v.text[off:], t.text)
			if j < 0 {
				break
			}
			fs, fe := off+j, off+j+len(t.text)
			spans = append(spans, span{int(v.at[fs]), int(v.at[fe-1]) + 1})
			found = true
			off = fe
		}
		if !found {
			return "", nil, false
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return a.s - b.s })
	merged := spans[:1]
	for _, sp := range spans[1:] {
		last := &merged[len(merged)-1]
		if sp.s <= last.e {
			last.e = max(last.e, sp.e)
			continue
		}
		merged = append(merged, sp)
	}
	start := max(0, merged[0].s-snippetLead)
	end := min(len(v.disp), start+snippetRunes)
	if end == len(v.disp) {
		start = max(0, end-snippetRunes)
	}
	var b strings.Builder
	units := 0
	if start > 0 {
		b.WriteString("…")
		units++
	}
	// pos[i] is the UTF-16 offset of rune start+i in the snippet.
	pos := make([]int, end-start+1)
	for i := start; i < end; i++ {
		pos[i-start] = units
		b.WriteRune(v.disp[i])
		units += utf16.RuneLen(v.disp[i])
	}
	pos[end-start] = units
	if end < len(v.disp) {
		b.WriteString("…")
	}
	var ranges []Range
	for _, sp := range merged {
		s, e := max(sp.s, start), min(sp.e, end)
		if s >= e {
			continue
		}
		ranges = append(ranges, Range{Start: pos[s-start], End: pos[e-start]})
	}
	return b.String(), ranges, true
}
