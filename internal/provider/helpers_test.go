package provider_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/blockjson"
	"github.com/loopdev/loop/internal/provider"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// recorder collects deltas.
type recorder struct{ deltas []provider.Delta }

func (r *recorder) on(d provider.Delta) { r.deltas = append(r.deltas, d) }

// joined concatenates the Text of deltas of kind k for block i.
func (r *recorder) joined(k provider.DeltaKind, block int) string {
	var b strings.Builder
	for _, d := range r.deltas {
		if d.Kind == k && d.Block == block {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

func (r *recorder) count(k provider.DeltaKind) int {
	n := 0
	for _, d := range r.deltas {
		if d.Kind == k {
			n++
		}
	}
	return n
}

func user(text string) convo.Message {
	return convo.Message{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: text}}}
}

// canonJSON re-encodes JSON with sorted keys and no spaces, so that
// documents can be compared as strings with readable diffs.
func canonJSON(t *testing.T, data []byte) string {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	g, w := canonJSON(t, got), canonJSON(t, []byte(want))
	if g != w {
		t.Errorf("JSON differs\n got: %s\nwant: %s", g, w)
	}
}

// field extracts one top-level member of a JSON object.
func field(t *testing.T, body []byte, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v", err)
	}
	return m[name]
}

func assertBlocks(t *testing.T, got []convo.Block, want string) {
	t.Helper()
	blocks := make([]blockjson.Block, len(got)) // the same member names as the history format
	for i := range got {
		blocks[i] = blockjson.Block(got[i])
	}
	b, err := json.Marshal(blocks)
	if err != nil {
		t.Fatalf("content does not serialize: %v", err)
	}
	assertJSON(t, b, want)
}
