package provider

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/loopdev/loop/convo"
)

// FuzzResponsesStreamNeverPanics: whatever a server sends as a Responses
// stream, reading it ends in a reply or an error, and the reply's tool
// arguments are JSON.
func FuzzResponsesStreamNeverPanics(f *testing.F) {
	seed, err := os.ReadFile("testdata/responses_reasoning_tools.sse")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte("event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":3,\"item\":{\"type\":\"function_call\"}}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.reasoning_summary_text.delta\",\"output_index\":0,\"summary_index\":2,\"delta\":\"x\"}\n\ndata: {\"type\":\"response.completed\"}\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := newBuilder("p", "m", nil)
		s := &responsesStream{b: b, items: map[int]*responsesItemState{}}
		_ = s.read(bytes.NewReader(data))
		msg, _ := b.finish(convo.StopEnd)
		for _, blk := range msg.Content {
			if blk.Type == convo.BlockToolCall && !json.Valid(blk.Arguments) {
				t.Fatalf("arguments %q", blk.Arguments)
			}
		}
	})
}
