package trace

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/loopdev/loop/internal/jsonenc"
)

// The records a call makes are encoded by hand (appendFlat): each must be
// exactly what jsonenc writes, every member set or left empty in turn.
func TestFlatRecordsEncodeAsJSONEncDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 15))
	strs := []string{"", "main", "sk-\"quoted\" \\ back", "é\u2028<&>", "\x00\x1f", "\xff bad", "http://x/v1?a=[REDACTED]"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	num := func() int { return []int{0, 0, 1, -3, 1 << 40}[rng.IntN(5)] }
	for i := range 5000 {
		r := Record{Type: str(), T: int64(num()), Version: num(), SessionID: str(), WorkspaceID: str(), Cwd: str(), Segment: num(),
			RunID: str(), RequestID: str(), Call: num(), Attempt: num(), Purpose: str(), Provider: str(), API: str(), Model: str(),
			Effort: str(), Permission: str(), Method: str(), URL: str(), BodyText: str(), Status: num(), Raw: str(), Error: str(),
			Retryable: rng.IntN(2) == 0, DurationMs: int64(num()), Attempts: num(), StopReason: str(), ToolCallID: str(), Name: str(),
			ResultBytes: num(), IsError: rng.IntN(2) == 0, Outcome: str(), Step: str(), Reason: str()}
		if rng.IntN(2) == 0 {
			r.Usage = &Usage{Input: num(), Output: num(), CacheRead: num(), CacheWrite: num(), TotalTokens: num()}
		}
		switch rng.IntN(4) {
		case 1:
			r.Input = &Input{Text: str()}
		case 2:
			r.Input = &Input{Text: str(), Skills: []string{str(), str()}}
		case 3:
			r.Input = &Input{Text: str(), Skills: []string{}}
		}
		if n := rng.IntN(4); n > 0 {
			r.Headers = map[string]string{}
			for range n {
				r.Headers[str()+"K"] = str()
			}
		}
		if !flat(&r) {
			t.Fatalf("record %d is not flat: %+v", i, r)
		}
		want, err := jsonenc.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendFlat(nil, &r); !bytes.Equal(got, want) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
		}
	}
	for _, r := range []Record{{Input: &Input{Images: []json.RawMessage{}}}, {Input: &Input{Files: []json.RawMessage{[]byte("{}")}}}, {Logical: []byte("{}")}, {Content: []Block{}}, {Arguments: []byte("{}")}, {Result: []Block{}}, {Events: []EventPatch{}}, {BodyPatch: &BodyPatch{}}, {Config: []byte("{}")}} {
		if flat(&r) {
			t.Errorf("%+v counts as flat", r)
		}
	}
}
