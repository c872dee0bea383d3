package importer

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzConvert: no input makes Convert panic, and what it accepts has a
// valid import record.
//
// The fuzzer's exec counter stands still for up to a minute after each new
// interesting input: go test minimizes it first (-fuzzminimizetime,
// default 60s) and reports the minimization's executions only when it
// ends, in one jump. Convert is not stalling: its cost is linear in the
// input (100,000 lines of any format convert in about a second, ten times 10,000). Run it
// with -fuzzminimizetime=1x to watch the counter move.
func FuzzConvert(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.jsonl")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 4000 {
			data = data[:4000]
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"session_meta","payload":{"id":"x"}}` + "\n" + `{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":7}}`))
	f.Add([]byte(`{"type":"user","uuid":"a","parentUuid":"a","sessionId":"s","message":{"content":[{"type":"tool_result"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		imp, err := Convert(data, "/src/f.jsonl")
		if err != nil {
			return
		}
		if imp.Header.Migration == nil || imp.Header.Migration.From == "" {
			t.Fatalf("accepted without an import record: %+v", imp.Header)
		}
	})
}
