package store

import "slices"

// What a scope's search index covers of one session (docs/storage.md,
// Search index): every append ends with an "h" line naming the messages
// it holds, so the index's coverage of a session is the union of those
// ranges. A range that starts past the rest leaves a gap: the messages of
// an append that never happened (the process died between a commit and
// its append, or the append failed and its session was closed before the
// next commit). A search reads the gaps, and the tail a header names past
// the index, from the logs and appends them.

// msgRange is the messages [from, to) of a session's history.
type msgRange struct{ from, to int }

// cover adds r to what the index holds of s.
func (s *searchSess) cover(r msgRange) {
	if r.from >= r.to {
		return
	}
	if r.from > s.covered {
		// Past a gap: kept apart, in order, merged with its neighbours.
		i, _ := slices.BinarySearchFunc(s.ahead, r.from, func(a msgRange, from int) int { return a.from - from })
		s.ahead = slices.Insert(s.ahead, i, r)
		out := s.ahead[:1]
		for _, a := range s.ahead[1:] {
			if last := &out[len(out)-1]; a.from <= last.to {
				last.to = max(last.to, a.to)
				continue
			}
			out = append(out, a)
		}
		s.ahead = out
		return
	}
	s.covered = max(s.covered, r.to)
	for len(s.ahead) > 0 && s.ahead[0].from <= s.covered {
		s.covered = max(s.covered, s.ahead[0].to)
		s.ahead = s.ahead[1:]
	}
	if len(s.ahead) == 0 {
		s.ahead = nil
	}
}

// holes returns the messages before n the index lacks of s: the gaps
// between its ranges and, with tail, the messages from its last range up
// to n (a header's messageCount).
func (s *searchSess) holes(n int, tail bool) []msgRange {
	var out []msgRange
	at := s.covered
	for _, a := range s.ahead {
		if at >= n {
			break
		}
		if a.from > at {
			out = append(out, msgRange{at, min(a.from, n)})
		}
		at = max(at, a.to)
	}
	if tail && at < n {
		out = append(out, msgRange{at, n})
	}
	return out
}
