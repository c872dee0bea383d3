package store

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Regression tests for the store review (docs/storage.md has the rules
// they hold).

// corruptHeader rewrites a closed session's header.json through edit.
func corruptHeader(t *testing.T, s *Session, edit func(*Header)) {
	t.Helper()
	hp := filepath.Join(s.Dir(), headerFile)
	b, err := os.ReadFile(hp)
	if err != nil {
		t.Fatal(err)
	}
	h, err := parseHeader(b, hp)
	if err != nil {
		t.Fatal(err)
	}
	edit(&h)
	var enc headerEncoder
	nb, err := enc.encode(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, nb, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A corrupt header count is ErrMalformed for Rounds, ReadMessages and
// Open: never a panic, an overflow or an allocation the files cannot back.
func TestRegressionCorruptCountsAreMalformed(t *testing.T) {
	for name, edit := range map[string]func(*Header){
		"overflowing count": func(h *Header) { h.MessageCount, h.MessagesBytes = 1<<60, 3<<60 },
		"count past index":  func(h *Header) { h.MessageCount, h.MessagesBytes = 1<<40, 3<<40 },
		"largest count": func(h *Header) {
			h.MessageCount, h.MessagesBytes = int(^uint(0)>>1), 1<<63-1
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, _ := newTestRoot(t)
			s, _ := r.Create("", t.TempDir())
			mustCommit(t, s, history(1), nil, nil)
			s.Close()
			corruptHeader(t, s, edit)
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic: %v", p)
				}
			}()
			if _, err := r.Rounds("", s.ID()); !errors.Is(err, ErrMalformed) {
				t.Fatalf("rounds: %v", err)
			}
			if _, err := r.ReadMessages("", s.ID(), 0, 1000); !errors.Is(err, ErrMalformed) {
				t.Fatalf("read messages past the index: %v", err)
			}
			if _, err := r.Open("", s.ID()); !errors.Is(err, ErrMalformed) {
				t.Fatalf("open: %v", err)
			}
		})
	}
}

// An index record pointing far past the log, inside a corrupt committed
// range, is ErrMalformed before ReadMessages allocates for it.
func TestRegressionReadMessagesCorruptOffset(t *testing.T) {
	r, _ := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	mustCommit(t, s, history(1), nil, nil)
	s.Close()
	corruptHeader(t, s, func(h *Header) { h.MessagesBytes = 1 << 50 })
	ip := filepath.Join(s.Dir(), indexFile)
	idx, _ := os.ReadFile(ip)
	binary.LittleEndian.PutUint64(idx[indexRecordSize:], 1<<49) // record 1's offset
	os.WriteFile(ip, idx, 0o600)
	if _, err := r.ReadMessages("", s.ID(), 1, 2); !errors.Is(err, ErrMalformed) {
		t.Fatalf("read messages: %v", err)
	}
}
