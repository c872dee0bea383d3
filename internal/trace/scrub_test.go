package trace

import (
	"bytes"
	"testing"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/redact"
)

// A writer whose Secrets change (a reloaded configuration) scrubs the new
// ones from the next line on.
func TestWriterScrubsTheSecretsItIsGivenNow(t *testing.T) {
	keys := redact.New("sk-first-secret")
	w := NewWriter(Options{Dir: t.TempDir(), Secrets: func() *redact.Set { return keys }})
	if got := w.scrub([]byte("a sk-first-secret b")); !bytes.Equal(got, []byte("a "+Redacted+" b")) {
		t.Fatalf("first: %q", got)
	}
	keys = redact.New("sk-second-secret")
	if got := w.scrub([]byte("a sk-second-secret b")); !bytes.Equal(got, []byte("a "+Redacted+" b")) {
		t.Fatalf("second: %q", got)
	}
}

// Event lines are encoded by hand: each must read back as its exact bytes
// and spell them as jsonenc (every other record's encoder) does.
func FuzzAppendJSONStringEncodesAsJSONEnc(f *testing.F) {
	for _, s := range []string{"data: {\"a\":\"b\\\\c\"}\n\n", "tab\there\r\n", "\x00\x1f\x7f", "é\u2028\u2029 <&>", "\xff\xfe bad", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		got := appendJSONString(nil, s)
		want, err := jsonenc.Marshal(string(s))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, jsonenc writes %s", s, got, want)
		}
	})
}

// A long string (a prompt's text in its record) is encoded as jsonenc
// does, into room of its encoded size and a little more for the rest of
// its record, not twice its length.
func TestALongStringIsEncodedIntoRoomOfItsSize(t *testing.T) {
	var b bytes.Buffer
	for b.Len() < 2<<20 {
		b.WriteString("data: {\"a\":\"b\\\\c\"}\n\ntab\there\r\n\x00\x1f\x7f é\u2028\u2029 <&> \xff\xfe bad ")
	}
	s := b.Bytes()
	got := appendJSONString(make([]byte, 0, 256), s)
	want, err := jsonenc.Marshal(string(s))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("a long string encodes differently from jsonenc")
	}
	if limit := len(want) + longStringSlack + 4096; cap(got) > limit {
		t.Errorf("%d bytes encoded into room of %d, want at most %d", len(got), cap(got), limit)
	}
}
