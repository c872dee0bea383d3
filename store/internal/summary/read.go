package summary

import "path/filepath"

// Claims reads the summary index of scope directory sd: the claim of each
// of names (state 0: none) and how many records it holds. ok is false
// when the scope is marked stale, the index cannot be read, or its last
// line is torn and no writer is finishing it: the index is to be rebuilt,
// as one that is missing.
func (x Index) Claims(sd string, names []string) (claims []Claim, records int, ok bool) {
	if _, stale := x.Marks.Stale(sd); stale {
		return nil, 0, false
	}
	data, _ := x.FS.ReadFile(filepath.Join(sd, FileName))
	pos := make(map[string]int, len(names))
	for i, name := range names {
		pos[name] = i
	}
	claims = make([]Claim, len(names))
	records, torn, ok := Scan(data, func(id []byte, c Claim) {
		if i, ok := pos[string(id)]; ok {
			claims[i] = c
		}
	})
	if !ok || (torn && x.tornForGood(sd)) {
		return nil, 0, false
	}
	return claims, records, true
}

// tornForGood reports whether an unterminated last line of the index is
// not a write in progress: no writer holds the scope's flock. Writers
// append under the shared lock, so getting it exclusively means none is
// writing; the line was cut (a full disk, a crash, damage) and the index
// cannot be trusted.
func (x Index) tornForGood(sd string) bool {
	lock, err := x.FS.Lock(sd)
	if err != nil {
		return false
	}
	defer lock.Close()
	data, err := x.FS.ReadFile(filepath.Join(sd, FileName))
	if err != nil {
		return true
	}
	_, _, torn, ok := ParseTorn(data)
	return !ok || torn
}
