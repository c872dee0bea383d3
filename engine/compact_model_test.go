package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// A compaction whose model config/reload removed answers with the model's
// error before anything is asked or written, and leaves the session idle
// and usable: set_model, abort, delete and shutdown all answer.
func TestCompactWithoutConfiguredModelLeavesSessionIdle(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         engine.Code
	}{
		{"model removed", `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m2"}]}}}`, engine.CodeModelNotFound},
		{"no provider", `{}`, engine.CodeNoProvider},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, `{"turns":[{"steps":[{"text":"a1"}]},{"steps":[{"text":"a2"}]},{"purpose":"summary","steps":[{"text":"S"}]}]}`)
			s := h.newSession()
			if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m1"}, nil); err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{"first", "second"} {
				res, err := s.Prompt(engine.PromptInput{RequestID: text, Text: text})
				if err != nil {
					t.Fatal(err)
				}
				h.settled(res.RunID)
			}
			if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := h.e.ReloadConfig(context.Background()); err != nil {
				t.Fatal(err)
			}
			before := s.Snapshot()

			_, err := s.Compact(context.Background())
			if engine.CodeOf(err) != tc.want {
				t.Fatalf("compact: want %s, got %v", tc.want, err)
			}
			after := s.Snapshot()
			if after.Operation != engine.OpIdle || after.State.CompactionStartedAt != nil || after.State.Compaction != nil {
				t.Fatalf("after the refused compaction: operation %q, compactionStartedAt %v, compaction %+v",
					after.Operation, after.State.CompactionStartedAt, after.State.Compaction)
			}
			if after.State.MessageCount != before.State.MessageCount {
				t.Fatalf("history changed: %d -> %d messages", before.State.MessageCount, after.State.MessageCount)
			}

			// The session is usable: the next commands answer, none is busy.
			if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: "m9"}, nil); engine.CodeOf(err) != engine.CodeModelNotFound {
				t.Fatalf("set_model after the compaction: want model_not_found, got %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if snap, err := s.Abort(ctx); err != nil || snap.Operation != engine.OpIdle {
				t.Fatalf("abort after the compaction: %v", err)
			}
			if err := h.e.ReloadConfig(ctx); err != nil {
				t.Fatalf("reload after the compaction: %v", err)
			}
			if err := h.e.Delete(ctx, h.ws, s.ID()); err != nil {
				t.Fatalf("delete after the compaction: %v", err)
			}
			if err := h.e.Shutdown(ctx, engine.Drain); err != nil {
				t.Fatalf("shutdown after the compaction: %v", err)
			}
		})
	}
}
