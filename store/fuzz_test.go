package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// The seed corpora live in testdata/fuzz/<target>/. Regenerate them with
// LOOP_STORE_WRITE_CORPUS=1 go test -run TestWriteFuzzCorpus ./store/
// then run a target with
// go test -run '^$' -fuzz FuzzParseHeader -fuzztime 30s ./store/

// FuzzParseHeader: parseHeader never panics, fails only with ErrMalformed
// or ErrUnsupportedFormat, and what it accepts encodes back to a header
// that parses to the same value.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte(`{"format":"loop-session","version":1,"id":"01a2284b-c4fe-7614-97b5-e9c387c39b50","workspaceId":null,"cwd":"/tmp","createdAt":1,"updatedAt":2,"unread":false,"messageCount":0,"userMessageCount":0,"messagesBytes":0,"messagesCrc32c":0,"runtimeCount":0,"runtimeBytes":0,"runtimeCrc32c":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, legacy, err := parseHeaderTimings(data, headerFile)
		// List's one-pass parser agrees on every verdict and value it
		// returns for well-formed JSON. (It does not check the syntax of
		// the prompt timings it skips: Open does.)
		lh, lerr := parseListHeader(bytes.Clone(data), headerFile)
		// List trusts a header that holds the timings key and ends with
		// "]}" to end with its timings (docs/storage.md); only a header
		// where that is not so may make it disagree.
		_, shortcut := parseListHead(bytes.Clone(data), data, headerFile)
		_, last := timingsLast(data)
		trusted := !shortcut || last
		switch {
		case !json.Valid(data):
		case err == nil && lerr != nil:
			t.Fatalf("list parser rejects a valid header: %v", lerr)
		case err == nil && trusted && !reflect.DeepEqual(h.Summary(), lh.Summary()):
			t.Fatalf("list parser disagrees:\n%+v\n%+v", h.Summary(), lh.Summary())
		case trusted && errors.Is(err, ErrUnsupportedFormat) != errors.Is(lerr, ErrUnsupportedFormat):
			t.Fatalf("format verdicts differ: %v / %v", err, lerr)
		}
		// The same from a head of any length (large headers).
		if err == nil && last {
			for _, n := range []int{len(data) / 2, len(data) - 1} {
				end := data[max(len(data)-64, 0):]
				if hh, ok := parseListHead(bytes.Clone(data[:max(n, 0)]), end, headerFile); ok && !reflect.DeepEqual(h.Summary(), hh.Summary()) {
					t.Fatalf("head of %d bytes disagrees:\n%+v\n%+v", n, h.Summary(), hh.Summary())
				}
			}
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedFormat) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		// An old header's timings are written back as they were (a
		// metadata save of a session not yet migrated).
		out, err := encodeHeader(&h, legacy)
		if err != nil {
			t.Fatalf("encode accepted header: %v", err)
		}
		h2, legacy2, err := parseHeaderTimings(out, headerFile)
		if err != nil {
			t.Fatalf("re-parse %s: %v", out, err)
		}
		if len(legacy) == 0 {
			legacy = nil // omitted when empty
		}
		if h.Migration != nil && len(h.Migration.Notes) == 0 {
			h.Migration.Notes = nil
		}
		if !reflect.DeepEqual(h, h2) || !reflect.DeepEqual(legacy, legacy2) {
			t.Fatalf("round trip changed the header:\n%+v %+v\n%+v %+v", h, legacy, h2, legacy2)
		}
	})
}

// timingsLast is the exact answer to what parseListHead assumes: the
// prompt timings are the header's last member. It scans the array to its
// closing bracket, jumping over strings.
func timingsLast(data []byte) (i int, ok bool) {
	i = bytes.Index(data, timingsKey)
	if i < 0 {
		return 0, false
	}
	depth := 0
	j := i + len(timingsKey) - 1
loop:
	for ; j < len(data); j++ {
		switch data[j] {
		case '"':
			for j++; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' {
					j++
				}
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				break loop
			}
		}
	}
	if j >= len(data) {
		return 0, false
	}
	rest := bytes.TrimSpace(data[j+1:])
	return i, len(rest) == 1 && rest[0] == '}'
}

// FuzzParseLog: the message and runtime log parsers never panic, fail only
// with ErrMalformed, and what they accept re-encodes (with an index) to a
// log that parses to the same messages.
func FuzzParseLog(f *testing.F) {
	f.Add([]byte(`{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		count := bytes.Count(data, []byte("\n"))
		if rt, err := parseRuntime(data, count, runtimeFile); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("runtime: error of no known kind: %v", err)
			}
		} else if len(rt) != count {
			t.Fatalf("runtime: %d records from %d lines", len(rt), count)
		}
		msgs, err := parseMessages(data, 0, count, nil, messagesFile, indexFile)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		b, err := encodeBatch(msgs, 0, 0, nil)
		if err != nil {
			// Content the decoder accepts but the encoder cannot write
			// (invalid JSON in arguments cannot get here: it is raw JSON
			// the decoder already validated).
			t.Fatalf("encode accepted messages: %v", err)
		}
		again, err := parseMessages(b.lines, 0, len(msgs), b.index, messagesFile, indexFile)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		b2, _ := encodeBatch(again, 0, 0, nil)
		if !bytes.Equal(b.lines, b2.lines) || !bytes.Equal(b.index, b2.index) {
			t.Fatalf("round trip is not stable:\n%s\n%s", b.lines, b2.lines)
		}
	})
}

// FuzzParseTimings: folding timings.jsonl never panics, fails only with
// ErrMalformed, and what it accepts, written back one record per timing at
// its index, folds to the same timings; so does appending the same
// records again (a migrating commit over a file that has records).
func FuzzParseTimings(f *testing.F) {
	f.Add([]byte(`{"index":0,"userMessageIndex":0,"messageStartIndex":0,"startedAt":1}` + "\n" +
		`{"index":0,"userMessageIndex":0,"messageStartIndex":0,"messageEndIndex":2,"startedAt":1,"finishedAt":2}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		count := bytes.Count(data, []byte("\n"))
		ts, err := parseTimings(nil, data, count, timingsFile)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		if len(ts) > count {
			t.Fatalf("%d timings from %d records", len(ts), count)
		}
		out, err := encodeTimings(indexed(ts))
		if err != nil {
			t.Fatalf("encode accepted timings: %v", err)
		}
		again, err := parseTimings(nil, out, len(ts), timingsFile)
		if err != nil || !reflect.DeepEqual(again, ts) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, ts, again)
		}
		both := append(bytes.Clone(data), out...)
		if over, err := parseTimings(nil, both, count+len(ts), timingsFile); err != nil || !reflect.DeepEqual(over, ts) {
			t.Fatalf("records written again: %v\n%+v\n%+v", err, ts, over)
		}
	})
}

// TestWriteFuzzCorpus regenerates the seed corpora from real sessions.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("LOOP_STORE_WRITE_CORPUS") == "" {
		t.Skip("set LOOP_STORE_WRITE_CORPUS=1 to regenerate testdata/fuzz")
	}
	r, _ := newTestRoot(t)
	ws, _ := r.AddWorkspace(t.TempDir(), "")
	s, err := r.Create(ws.ID, ws.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	running := PromptTiming{ID: "a", UserMessageIndex: 0, MessageStartIndex: Some(0), StartedAt: 1}
	finished := running
	finished.MessageEndIndex, finished.FinishedAt, finished.Stopped = Some(4), Some(int64(9)), true
	mustCommit(t, s, history(2), nil, nil, TimingAt{Index: 0, Timing: running})
	if err := s.Commit(history(3), []RuntimeRecord{rtRecord(RuntimeCompaction, 1)}, func(h *Header) {
		h.Unread, h.Title, h.TitleSource, h.Effort, h.Permission = true, "Fix the build", TitleAuto, "high", "read-only"
		h.Model = &ModelRef{Provider: "anthropic", ID: "claude"}
		h.Compaction = &CompactionMeta{ID: "c", MessageCount: 4, TokensBefore: 1000, CreatedAt: 7}
	}, TimingAt{Index: 0, Timing: finished}, TimingAt{Index: 1, Timing: PromptTiming{UserMessageIndex: 4, StartedAt: 5}}); err != nil {
		t.Fatal(err)
	}
	s.SetPinned(true)
	s.SetArchived(true)
	s.Close()
	m, err := r.MigrateLegacyTo("testdata/legacy/session-file-with-name-compaction-bash.jsonl", "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	full := read(s.Dir(), headerFile)
	headers := map[string][]byte{
		"full":         full,
		"old-timings":  read(filepath.Join(legacyGoldenDir, "sessions", goldenWorkspace, goldenSession), headerFile),
		"migrated":     read(m.Dir(), headerFile),
		"minimal":      []byte(`{"format":"loop-session","version":1,"id":"01a2284b-c4fe-7614-97b5-e9c387c39b50","workspaceId":null,"cwd":"/tmp","createdAt":1,"updatedAt":2,"unread":false,"messageCount":0,"userMessageCount":0,"messagesBytes":0,"messagesCrc32c":0,"runtimeCount":0,"runtimeBytes":0,"runtimeCrc32c":0}`),
		"version2":     bytes.Replace(full, []byte(`"version":1`), []byte(`"version":2`), 1),
		"other-format": []byte(`{"format":"other","version":1}`),
		"pi-header":    []byte(`{"type":"session","version":3,"id":"01a2284b-c4fe-7614-97b5-e9c387c39b50","timestamp":"2026-11-29T17:13:03.999Z","cwd":"/tmp/pi/work"}`),
		"torn":         full[:len(full)/2],
		"bad-counts":   bytes.Replace(full, []byte(`"userMessageCount":3`), []byte(`"userMessageCount":30`), 1),
		"null":         []byte(`null`),
		"array":        []byte(`[1,2]`),
		"wrong-types":  bytes.Replace(full, []byte(`"unread":true`), []byte(`"unread":"yes"`), 1),
	}
	logs := map[string][]byte{
		"messages":       read(s.Dir(), messagesFile),
		"runtime":        read(s.Dir(), runtimeFile),
		"migrated":       read(m.Dir(), messagesFile),
		"migrated-rt":    read(m.Dir(), runtimeFile),
		"torn-last-line": append(read(s.Dir(), messagesFile), `{"role":"user","content":[{"ty`...),
		"bad-role":       []byte(`{"role":"system","content":[]}` + "\n"),
		"not-json":       []byte("hello\n"),
		"empty":          {},
	}
	tm := read(s.Dir(), timingsFile)
	timings := map[string][]byte{
		"replaced":       tm,
		"torn-last-line": append(bytes.Clone(tm), `{"index":2,"userMe`...),
		"gap":            []byte(`{"index":1,"userMessageIndex":0,"startedAt":1}` + "\n"),
		"negative":       []byte(`{"index":-1,"userMessageIndex":0,"startedAt":1}` + "\n"),
		"bad-index":      []byte(`{"index":0,"userMessageIndex":0,"messageEndIndex":-3,"startedAt":1}` + "\n"),
		"empty":          {},
	}
	write := func(target string, corpus map[string][]byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range corpus {
			content := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(data)))
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("FuzzParseHeader", headers)
	write("FuzzParseLog", logs)
	write("FuzzParseTimings", timings)
}
