// Package summary is the summary index of a scope (docs/storage.md,
// "Summary index"): its file format, its reading, the records writers
// append around a header publish, and its rebuild. It is derived data the
// store keeps beside the commit path, not inside it: package store turns
// a header into a Record, reaches the index through its Observer
// (store/summaries.go) and reads the headers a list page verifies
// (store/listpage.go, store/recent.go). The package knows no header and
// no session; it works on Records and on the store's file-system seam
// (store/internal/fsys).
//
// sessions/<scope>/.summaries holds one small line per change of a
// session's place in the list, so that the first page of a list reads
// the headers of that page, not of the whole scope. Each line makes a
// claim about one session: its updatedAt and which lists it may belong
// to. The latest line of an id is its claim, and the protocol keeps every
// claim at or above the truth (a session never ranks higher, nor belongs
// to more lists, than its claim says); a claim marked exact equals the
// header's. Readers verify every session they return against its header;
// an index that is missing, damaged or disagrees with an exact claim is
// rebuilt from the headers.
package summary

import (
	"bytes"

	"github.com/loopdev/loop/store/internal/fsys"
)

const (
	// FileName is the index's name in a scope directory.
	FileName = ".summaries"
	// FileHeader is the first line of an index file.
	FileHeader = "loop-summaries 1\n"
	// LineSize is the length of one record line, "\n" included.
	LineSize = 2 + 1 + 36 + 1 + 16 + 1 + 8 + 1
	// MaxUnknown is how many directory names the index may not know (made
	// by a writer that does not maintain it) before a list rebuilds it
	// instead of reading their headers one by one.
	MaxUnknown = 64
)

// Claim states.
const (
	Exact     = 'e' // the header's updatedAt and lists, as published
	Loose     = 'l' // an upper bound: a change is being published
	Malformed = 'm' // the header was malformed at the last rebuild
	Other     = 'x' // not a session of this format (no header, another format)
	Deleted   = 'd' // the directory was deleted
)

// Claim flags: the lists a session may belong to.
const (
	InUnarchived = 1 // not archived, holds a user message
	InArchived   = 2
)

// Claim is one record: what the index says about a session. State 0 is
// no claim.
type Claim struct {
	State     byte
	Flags     byte
	UpdatedAt int64
}

// Record is what the index needs of a session's header.
type Record struct {
	ID        string
	UpdatedAt int64
	Archived  bool
	// HasUserMessage: the session holds a user message (an unarchived
	// session without one is in no list).
	HasUserMessage bool
}

// ClaimOf is the exact claim of a header.
func ClaimOf(rec Record) Claim {
	c := Claim{State: Exact, UpdatedAt: rec.UpdatedAt}
	switch {
	case rec.Archived:
		c.Flags = InArchived
	case rec.HasUserMessage:
		c.Flags = InUnarchived
	}
	return c
}

// AppendLine appends the record line of id's claim c to b.
func AppendLine(b []byte, id string, c Claim) []byte {
	start := len(b)
	b = append(b, c.State, "0123456789abcdef"[c.Flags&0xf], ' ')
	b = append(b, id...)
	b = append(b, ' ')
	b = appendHex(b, uint64(c.UpdatedAt), 16)
	b = append(b, ' ')
	b = appendHex(b, uint64(fsys.CRC32C(0, b[start:])), 8)
	return append(b, '\n')
}

func appendHex(b []byte, v uint64, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		b = append(b, "0123456789abcdef"[(v>>(4*uint(i)))&0xf])
	}
	return b
}

// parseLine decodes one record line (without its "\n"). The id is a
// slice of line.
func parseLine(line []byte) ([]byte, Claim, bool) {
	if len(line) != LineSize-1 || line[2] != ' ' || line[39] != ' ' || line[56] != ' ' {
		return nil, Claim{}, false
	}
	crc, ok1 := parseHex(line[57:])
	flags, ok2 := parseHex(line[1:2])
	u, ok3 := parseHex(line[40:56])
	id := line[3:39]
	if !ok1 || !ok2 || !ok3 || uint32(crc) != fsys.CRC32C(0, line[:57]) || int64(u) < 0 || !canonicalUUID(id) {
		return nil, Claim{}, false
	}
	switch line[0] {
	case Exact, Loose, Malformed, Other, Deleted:
	default:
		return nil, Claim{}, false
	}
	return id, Claim{State: line[0], Flags: byte(flags), UpdatedAt: int64(u)}, true
}

// parseHex reads lower-case hex digits.
func parseHex(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// canonicalUUID is the store's validID without allocating: 36 lower-case
// hex digits and dashes in the canonical places.
func canonicalUUID(b []byte) bool {
	if len(b) != 36 {
		return false
	}
	for i, c := range b {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if _, ok := parseHex(b[i : i+1]); !ok {
			return false
		}
	}
	return true
}

// Parse decodes an index file: the latest claim of each id and the number
// of records. ok is false for a file that is not an index or holds a
// damaged line.
func Parse(data []byte) (map[string]Claim, int, bool) {
	claims, n, _, ok := ParseTorn(data)
	return claims, n, ok
}

// ParseTorn is Parse, and also says whether the last line is unterminated
// (left out).
func ParseTorn(data []byte) (map[string]Claim, int, bool, bool) {
	claims := map[string]Claim{}
	n, torn, ok := Scan(data, func(id []byte, c Claim) { claims[string(id)] = c })
	if !ok {
		return nil, 0, false, false
	}
	return claims, n, torn, true
}

// Scan calls visit for each record of an index file, in order, and counts
// them. ok is false for a file that is not an index or holds a damaged
// line; visit may have seen part of it then. An unterminated last line is
// left out (torn says there is one): it may be a write in progress, whose
// writer has not published what it announces yet.
func Scan(data []byte, visit func(id []byte, c Claim)) (n int, torn, ok bool) {
	if !bytes.HasPrefix(data, []byte(FileHeader)) {
		return 0, false, false
	}
	data = data[len(FileHeader):]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return n, true, true
		}
		id, c, ok := parseLine(data[:i])
		if !ok {
			return 0, false, false
		}
		visit(id, c)
		n++
		data = data[i+1:]
	}
	return n, false, true
}
