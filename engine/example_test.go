package engine_test

import (
	"context"
	"fmt"
	"os"

	"github.com/loopdev/loop/engine"
)

// A host drives the engine directly: no protocol in between.
func Example() {
	dir, _ := os.MkdirTemp("", "loop-example")
	defer os.RemoveAll(dir)
	os.WriteFile(dir+"/config.json", []byte(`{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`), 0o600)
	os.WriteFile(dir+"/script.json", []byte(`{"turns":[{"steps":[{"text":"Hello"},{"text":", world"}]}]}`), 0o600)

	e, _ := engine.New(engine.Options{DataRoot: dir})
	e.Subscribe(func(ev engine.Event) {
		if m, ok := ev.Payload.(*engine.MessageEvent); ok && m.Event == "delta" {
			fmt.Printf("delta %q\n", m.Delta)
		}
	})
	s, _ := e.NewSession("") // an independent draft
	res, _ := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hi"})
	_ = s.Wait(context.Background())
	snap := s.Snapshot()
	fmt.Println(res.Queued, snap.State.MessageCount, snap.State.Messages[1].Text())
	_ = e.Shutdown(context.Background(), engine.Drain)
	// Output:
	// delta "Hello"
	// delta ", world"
	// false 2 Hello, world
}
