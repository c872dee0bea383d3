package store

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A corrupt index.bin is reported as index.bin: the error names that file
// as the malformed one, for Open and for paging, whichever field of a
// record is wrong. messages.jsonl, whose committed range the header's
// checksum vouches for, is not blamed.
func TestCorruptIndexNamesIndexFile(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, history(2), nil, nil)
	s.Close()
	ipath := filepath.Join(s.Dir(), indexFile)
	orig, err := os.ReadFile(ipath)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		change func(idx []byte)
	}{
		{"offset", func(idx []byte) { binary.LittleEndian.PutUint64(idx[2*indexRecordSize:], 5) }},
		{"length", func(idx []byte) { binary.LittleEndian.PutUint32(idx[2*indexRecordSize+8:], 3) }},
		{"kind", func(idx []byte) { idx[2*indexRecordSize+12] = kindUser }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			idx := append([]byte(nil), orig...)
			c.change(idx)
			if err := os.WriteFile(ipath, idx, 0o600); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(ipath, orig, 0o600)
			blamesIndex := func(what string, err error) {
				t.Helper()
				// The file right after the sentinel is the one that is wrong.
				if !errors.Is(err, ErrMalformed) || !strings.HasPrefix(err.Error(), ErrMalformed.Error()+": "+ipath+": ") {
					t.Errorf("%s: %v, want ErrMalformed naming %s", what, err, ipath)
				}
			}
			_, err := r.Open("", s.ID())
			blamesIndex("Open", err)
			_, err = r.ReadMessages("", s.ID(), 1, 4)
			blamesIndex("ReadMessages", err)
			_, err = r.ReadMessages("", s.ID(), 2, 3)
			blamesIndex("ReadMessages of the bad record alone", err)
		})
	}
}
