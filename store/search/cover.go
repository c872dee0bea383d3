package search

import (
	"encoding/hex"
	"slices"
)

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

// coverage is what the index holds of one session (of one createdAt):
// messages [0, covered) and the ranges in ahead, which lie past a gap, in
// order and apart; and count, the number of messages its writer last
// said it has (a catch-up may raise it): lines of the session's messages
// from count on are not its history.
type coverage struct {
	createdAt int64
	covered   int
	ahead     []msgRange
	count     int
}

// sessionKey is a session id as 16 bytes: the coverage of every session a
// scope's index names is kept while it is read, without a string each.
type sessionKey [16]byte

// keyOf parses a canonical UUID (8-4-4-4-12 hex digits).
func keyOf[T string | []byte](id T) (k sessionKey, ok bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return k, false
	}
	var hexDigits [32]byte
	n := 0
	for i := range len(id) {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		hexDigits[n] = id[i]
		n++
	}
	_, err := hex.Decode(k[:], hexDigits[:])
	return k, err == nil
}

func (k sessionKey) String() string {
	var b [36]byte
	hex.Encode(b[:8], k[:4])
	b[8] = '-'
	hex.Encode(b[9:13], k[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], k[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], k[8:10])
	b[23] = '-'
	hex.Encode(b[24:], k[10:])
	return string(b[:])
}

// cover adds r to what the index holds.
func (c *coverage) cover(r msgRange) {
	if r.from >= r.to {
		return
	}
	if r.from > c.covered {
		// Past a gap: kept apart, in order, merged with its neighbours.
		i, _ := slices.BinarySearchFunc(c.ahead, r.from, func(a msgRange, from int) int { return a.from - from })
		c.ahead = slices.Insert(c.ahead, i, r)
		out := c.ahead[:1]
		for _, a := range c.ahead[1:] {
			if last := &out[len(out)-1]; a.from <= last.to {
				last.to = max(last.to, a.to)
				continue
			}
			out = append(out, a)
		}
		c.ahead = out
		return
	}
	c.covered = max(c.covered, r.to)
	for len(c.ahead) > 0 && c.ahead[0].from <= c.covered {
		c.covered = max(c.covered, c.ahead[0].to)
		c.ahead = c.ahead[1:]
	}
	if len(c.ahead) == 0 {
		c.ahead = nil
	}
}

// cut forgets what the index held of messages from k on: a writer's "h"
// line says they are no longer what it holds (a rewind dropped them, or
// an append that failed may have left part of them).
func (c *coverage) cut(k int) {
	c.covered = min(c.covered, k)
	out := c.ahead[:0]
	for _, a := range c.ahead {
		if a.from >= k {
			break
		}
		out = append(out, msgRange{a.from, min(a.to, k)})
	}
	c.ahead = out
	if len(c.ahead) == 0 {
		c.ahead = nil
	}
}

// inherit adds what the index holds of p's first k messages: a fork's
// part that it reads from its parent p, whose lines are the fork's too.
func (c *coverage) inherit(p *coverage, k int) {
	c.cover(msgRange{0, min(p.covered, k)})
	for _, a := range p.ahead {
		if a.from >= k {
			break
		}
		c.cover(msgRange{a.from, min(a.to, k)})
	}
	c.count = max(c.count, k)
}

// holes returns the messages before n the index lacks: the gaps between
// its ranges and the messages from its last range up to the count its
// writer gave, or with tail up to n (a header's messageCount).
func (c *coverage) holes(n int, tail bool) []msgRange {
	var out []msgRange
	at := c.covered
	for _, a := range c.ahead {
		if at >= n {
			break
		}
		if a.from > at {
			out = append(out, msgRange{at, min(a.from, n)})
		}
		at = max(at, a.to)
	}
	end := n
	if !tail {
		end = min(n, c.count)
	}
	if at < end {
		out = append(out, msgRange{at, end})
	}
	return out
}
