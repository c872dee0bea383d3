package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// capBuffer keeps the head and the tail of a stream within a byte cap:
// the first half of the cap as it arrives, then a sliding window of the
// last half. The middle is dropped and counted.
type capBuffer struct {
	limit int
	head  []byte
	tail  []byte // ring contents, oldest first after compaction
	total int
}

func newCapBuffer(limit int) *capBuffer {
	return &capBuffer{limit: limit}
}

func (c *capBuffer) Write(p []byte) (int, error) {
	written := len(p)
	c.total += written
	headCap := c.limit / 2
	if room := headCap - len(c.head); room > 0 {
		n := min(room, len(p))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return written, nil
	}
	tailCap := c.limit - headCap
	c.tail = append(c.tail, p...)
	if len(c.tail) > 2*tailCap {
		// Compact now and then rather than on every write.
		c.tail = append(c.tail[:0:0], c.tail[len(c.tail)-tailCap:]...)
	}
	return written, nil
}

// truncated reports whether bytes were dropped.
func (c *capBuffer) truncated() bool { return c.total > c.limit }

// String returns the kept output as valid UTF-8, with a note where the
// middle was cut.
func (c *capBuffer) String() string {
	tailCap := c.limit - c.limit/2
	tail := c.tail
	if len(tail) > tailCap {
		tail = tail[len(tail)-tailCap:]
	}
	if !c.truncated() {
		return strings.ToValidUTF8(string(c.head)+string(tail), "\uFFFD")
	}
	head := trimRuneEnd(c.head)
	tail = trimRuneStart(tail)
	dropped := c.total - len(head) - len(tail)
	return strings.ToValidUTF8(string(head), "\uFFFD") +
		fmt.Sprintf("\n\n[... %d bytes of output omitted: %d bytes in all, the first %d and the last %d are shown ...]\n\n", dropped, c.total, len(head), len(tail)) +
		strings.ToValidUTF8(string(tail), "\uFFFD")
}

// trimRuneEnd drops a rune cut off at the end of b.
func trimRuneEnd(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// trimRuneStart drops continuation bytes of a rune cut off at b's start.
func trimRuneStart(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}

// utf8Splitter holds back a rune cut off at the end of a chunk, so each
// streamed string is valid UTF-8 when the stream is.
type utf8Splitter struct{ pending []byte }

func (s *utf8Splitter) next(p []byte) string {
	b := append(s.pending, p...)
	keep := trimRuneEnd(b)
	s.pending = append(s.pending[:0:0], b[len(keep):]...)
	return strings.ToValidUTF8(string(keep), "\uFFFD")
}

func (s *utf8Splitter) flush() string {
	out := strings.ToValidUTF8(string(s.pending), "\uFFFD")
	s.pending = nil
	return out
}
