package native

import (
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// BenchmarkSnapshotOf converts the snapshot of a 1,500-message, 6 MB
// history into its wire type, as every session/state of that session does
// on the engine's event delivery (the encoding happens later, on the
// outbox's writer). The strings are shared, not copied.
func BenchmarkSnapshotOf(b *testing.B) {
	text := strings.Repeat("x", 2000)
	msgs := make([]convo.Message, 1500)
	for i := range msgs {
		msgs[i] = convo.Message{Role: convo.RoleAssistant, Timestamp: int64(i), Provider: "p", Model: "m",
			Usage:   &convo.Usage{Input: 1, Output: 2, TotalTokens: 3},
			Content: []convo.Block{{Type: convo.BlockThinking, Text: text}, {Type: convo.BlockText, Text: text}}}
	}
	snap := &engine.Snapshot{SessionID: "s", State: engine.State{Messages: msgs}}
	b.ReportAllocs()
	for b.Loop() {
		if SnapshotOf(snap) == nil {
			b.Fatal("nil")
		}
	}
}
