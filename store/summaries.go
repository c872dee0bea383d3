package store

import (
	"bytes"
	"path/filepath"
)

// The summary index (docs/storage.md, "Summary index"): sessions/<scope>/.summaries
// holds one small line per change of a session's place in the list, so
// that the first page of a list reads the headers of that page, not of the
// whole scope. It is derived data. Each line makes a claim about one
// session: its updatedAt and which lists it may belong to. The latest line
// of an id is its claim, and the protocol keeps every claim at or above
// the truth (a session never ranks higher, nor belongs to more lists, than
// its claim says); a claim marked exact equals the header's. Readers verify
// every session they return against its header; an index that is missing,
// damaged or disagrees with an exact claim is rebuilt from the headers.
const (
	summariesFile   = ".summaries"
	summariesHeader = "loop-summaries 1\n"
	// summaryLineSize is the length of one record line, "\n" included.
	summaryLineSize = 2 + 1 + 36 + 1 + 16 + 1 + 8 + 1
	// maxUnknown is how many directory names the index may not know (made
	// by a writer that does not maintain it) before a list rebuilds it
	// instead of reading their headers one by one.
	maxUnknown = 64
)

// Record states.
const (
	claimExact     = 'e' // the header's updatedAt and lists, as published
	claimLoose     = 'l' // an upper bound: a change is being published
	claimMalformed = 'm' // the header was malformed at the last rebuild
	claimOther     = 'x' // not a session of this format (no header, another format)
	claimDeleted   = 'd' // the directory was deleted
)

// Claim flags: the lists a session may belong to.
const (
	inUnarchived = 1 // not archived, holds a user message
	inArchived   = 2
)

// claim is one record: what the index says about a session.
type claim struct {
	state     byte
	flags     byte
	updatedAt int64
}

func claimOf(h *Header) claim {
	c := claim{state: claimExact, updatedAt: h.UpdatedAt}
	switch {
	case h.ArchivedAt != nil:
		c.flags = inArchived
	case h.UserMessageCount > 0:
		c.flags = inUnarchived
	}
	return c
}

func appendSummaryLine(b []byte, id string, c claim) []byte {
	start := len(b)
	b = append(b, c.state, "0123456789abcdef"[c.flags&0xf], ' ')
	b = append(b, id...)
	b = append(b, ' ')
	b = appendHex(b, uint64(c.updatedAt), 16)
	b = append(b, ' ')
	b = appendHex(b, uint64(crcUpdate(0, b[start:])), 8)
	return append(b, '\n')
}

func appendHex(b []byte, v uint64, width int) []byte {
	for i := width - 1; i >= 0; i-- {
		b = append(b, "0123456789abcdef"[(v>>(4*uint(i)))&0xf])
	}
	return b
}

// parseSummaryLine decodes one record line (without its "\n"). The id
// is a slice of line.
func parseSummaryLine(line []byte) ([]byte, claim, bool) {
	if len(line) != summaryLineSize-1 || line[2] != ' ' || line[39] != ' ' || line[56] != ' ' {
		return nil, claim{}, false
	}
	crc, ok1 := parseHex(line[57:])
	flags, ok2 := parseHex(line[1:2])
	u, ok3 := parseHex(line[40:56])
	id := line[3:39]
	if !ok1 || !ok2 || !ok3 || uint32(crc) != crcUpdate(0, line[:57]) || int64(u) < 0 || !canonicalUUID(id) {
		return nil, claim{}, false
	}
	switch line[0] {
	case claimExact, claimLoose, claimMalformed, claimOther, claimDeleted:
	default:
		return nil, claim{}, false
	}
	return id, claim{state: line[0], flags: byte(flags), updatedAt: int64(u)}, true
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

// canonicalUUID is validID without allocating: 36 lower-case hex digits
// and dashes in the canonical places.
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

// parseSummaries decodes an index file: the latest claim of each id and
// the number of records. ok is false for a file that is not an index or
// holds a damaged line.
func parseSummaries(data []byte) (map[string]claim, int, bool) {
	claims := map[string]claim{}
	n, _, ok := scanSummaries(data, func(id []byte, c claim) { claims[string(id)] = c })
	if !ok {
		return nil, 0, false
	}
	return claims, n, true
}

func parseSummariesTorn(data []byte) (map[string]claim, int, bool, bool) {
	claims := map[string]claim{}
	n, torn, ok := scanSummaries(data, func(id []byte, c claim) { claims[string(id)] = c })
	if !ok {
		return nil, 0, false, false
	}
	return claims, n, torn, true
}

// scanSummaries calls visit for each record of an index file, in order,
// and counts them. ok is false for a file that is not an index or holds a
// damaged line; visit may have seen part of it then. An unterminated last
// line is left out (torn says there is one): it may be a write in
// progress, whose writer has not published what it announces yet.
func scanSummaries(data []byte, visit func(id []byte, c claim)) (n int, torn, ok bool) {
	if !bytes.HasPrefix(data, []byte(summariesHeader)) {
		return 0, false, false
	}
	data = data[len(summariesHeader):]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return n, true, true
		}
		id, c, ok := parseSummaryLine(data[:i])
		if !ok {
			return 0, false, false
		}
		visit(id, c)
		n++
		data = data[i+1:]
	}
	return n, false, true
}

// tornForGood reports whether an unterminated last line of the index is
// not a write in progress: no writer holds the scope's flock. Writers
// append under the shared lock, so getting it exclusively means none is
// writing; the line was cut (a full disk, a crash, damage) and the index
// cannot be trusted.
func (r *Root) tornForGood(sd string) bool {
	lock, err := r.fs.Lock(sd)
	if err != nil {
		return false
	}
	defer lock.Close()
	data, err := r.fs.ReadFile(filepath.Join(sd, summariesFile))
	if err != nil {
		return true
	}
	_, _, torn, ok := parseSummariesTorn(data)
	return !ok || torn
}

// indexClaims reads the scope's summary index: the claim of each of names
// (state 0: none) and how many records it holds. ok is false when this
// process marked it stale, it cannot be read, or its last line is torn and
// no writer is finishing it: the index is to be rebuilt, as one that is
// missing.
func (r *Root) indexClaims(sd string, names []string) (claims []claim, records int, ok bool) {
	if _, stale := r.marks.summariesStale(sd); stale {
		return nil, 0, false
	}
	data, _ := r.fs.ReadFile(filepath.Join(sd, summariesFile))
	pos := make(map[string]int, len(names))
	for i, name := range names {
		pos[name] = i
	}
	claims = make([]claim, len(names))
	records, torn, ok := scanSummaries(data, func(id []byte, c claim) {
		if i, ok := pos[string(id)]; ok {
			claims[i] = c
		}
	})
	if !ok || (torn && r.tornForGood(sd)) {
		return nil, 0, false
	}
	return claims, records, true
}
