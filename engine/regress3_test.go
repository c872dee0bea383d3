package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// Abort of the first prompt: the run's finalization starts background
// title work after the abort was requested, and Abort does not drain it.
func TestRegressionAbortStartsTitleAfterwards(t *testing.T) {
	root := t.TempDir()
	script := `{"turns":[{"steps":[{"text":"partial"},{"hang":true}]},{"purpose":"title","steps":[{"sleepMs":200},{"text":"A title"}]}]}`
	os.WriteFile(filepath.Join(root, "script.json"), []byte(script), 0o600)
	os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"providers":{"fake":{"api":"scripted","script":"script.json","titles":true,"models":[{"id":"m1"}]}}}`), 0o600)
	e, err := engine.New(engine.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(engine.PromptInput{RequestID: "1", Text: "hello there"}); err != nil {
		t.Fatal(err)
	}
	for s.Snapshot().State.Streaming == nil || len(s.Snapshot().State.Streaming.Content) == 0 {
		time.Sleep(time.Millisecond)
	}
	snap, err := s.Abort(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after abort: title=%q messages=%d", snap.State.Title, len(snap.State.Messages))
	time.Sleep(400 * time.Millisecond)
	if got := s.Snapshot().State.Title; got != "" {
		t.Errorf("title work ran after Abort returned (title %q)", got)
	}
}
