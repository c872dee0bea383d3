package native

import (
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// BenchmarkSnapshotOf converts the snapshot of a 1,500-message, 6 MB
// history into its wire type, as every session/state of that session does
// on the engine's event delivery (the encoding happens later, on the
// outbox's writer). The strings are shared, not copied.
func BenchmarkSnapshotOf(b *testing.B) {
	text := strings.Repeat("x", 2000)
	msgs := make([]store.Message, 1500)
	for i := range msgs {
		msgs[i] = store.Message{Role: store.RoleAssistant, Timestamp: int64(i), Provider: "p", Model: "m",
			Usage:   &store.Usage{Input: 1, Output: 2, TotalTokens: 3},
			Content: []store.Block{{Type: store.BlockThinking, Text: text}, {Type: store.BlockText, Text: text}}}
	}
	snap := &engine.Snapshot{SessionID: "s", State: engine.State{Messages: msgs}}
	b.ReportAllocs()
	for b.Loop() {
		if SnapshotOf(snap) == nil {
			b.Fatal("nil")
		}
	}
}
