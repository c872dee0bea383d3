package trace

import (
	"os"
	"path/filepath"
	"testing"
)

// A trace is a file anyone may hand over with a bug report: whatever its
// lines hold, reading it, rebuilding its bodies and preparing its replay
// return an error or a result, never a panic.
func FuzzReadingACraftedTraceNeverPanics(f *testing.F) {
	f.Add([]byte(`{"type":"trace","t":1,"version":2,"sessionId":"s","segment":1}
{"type":"prompt","t":2,"requestId":"r1","input":{"text":"hi"}}
{"type":"call","t":3,"call":1,"purpose":"main","api":"openai"}
{"type":"request","t":4,"call":1,"attempt":1,"body":{"m":[1]}}
{"type":"request","t":4,"call":1,"attempt":2,"bodyPatch":{"base":1,"prefix":5,"suffix":2,"insert":",2"}}
{"type":"response","t":5,"call":1,"attempt":2,"status":200}
{"type":"events","t":6,"call":1,"attempt":2,"events":[[0,0,0,"data: {}\n\n"],[1,6,3,"x"]]}
{"type":"result","t":7,"call":1}
`))
	f.Add([]byte(`{"type":"trace","t":1,"version":3,"sessionId":"s","segment":1}
{"type":"config","t":1,"config":{"providers":{"oa":{"api":"openai","models":[{"id":"m"}],"titles":true}}}}
{"type":"prompt","t":2,"runId":"u","requestId":"r1","input":{"text":"hi"}}
{"type":"call","t":3,"runId":"u","call":1,"purpose":"main","api":"openai"}
{"type":"tool","t":4,"runId":"u","toolCallId":"call_1","name":"ls"}
{"type":"end","t":5,"runId":"u","step":"prompt","outcome":"completed"}
{"type":"end","t":6,"step":"title"}
`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, SegmentName(1)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		tr, err := Read(dir)
		if err != nil {
			return
		}
		b := tr.Bodies()
		for i := len(tr.Records) - 1; i >= 0; i-- {
			if tr.Records[i].Type == TypeRequest {
				_, _ = b.Of(i)
			}
		}
		_, _ = NewReplayer(tr)
	})
}
