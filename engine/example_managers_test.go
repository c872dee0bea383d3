package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loopdev/loop/engine"
)

// The session managers a command-line host uses: a persistent session
// written at once, continuing the workspace's most recent one, opening one
// by its exact path, and a session kept only in memory.
func Example_sessionManagers() {
	dir, _ := os.MkdirTemp("", "loop-example")
	defer os.RemoveAll(dir)
	project := filepath.Join(dir, "project")
	os.Mkdir(project, 0o700)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`), 0o600)
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"turns":[{"steps":[{"text":"saved"}]},{"steps":[{"text":"forgotten"}]}]}`), 0o600)

	e, _ := engine.New(engine.Options{DataRoot: dir})
	ws, _ := e.AddWorkspace(project, "")

	// A persistent session: its directory exists before the first prompt.
	s, _ := e.CreateSession(ws.ID, engine.SessionOptions{Permission: "read-only"})
	_, err := os.Stat(filepath.Join(dir, "sessions", ws.ID, s.ID(), "header.json"))
	fmt.Println("created on disk:", err == nil)
	s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hi"})
	s.Wait(context.Background())

	// Continue: the most recently active session of the workspace.
	c, created, _ := e.ContinueRecent(ws.ID, engine.SessionOptions{})
	fmt.Println("continued the same:", c.ID() == s.ID(), "created:", created)

	// Open by the exact path of its directory (or its header.json).
	o, _ := e.OpenPath(filepath.Join(dir, "sessions", ws.ID, s.ID(), "header.json"))
	fmt.Println("opened the same:", o.ID() == s.ID())

	// In memory: nothing is written under the data root.
	m, _ := e.NewInMemorySession(project, engine.SessionOptions{})
	m.Prompt(engine.PromptInput{RequestID: "r2", Text: "hello"})
	m.Wait(context.Background())
	fmt.Println("in memory:", m.Snapshot().State.Messages[1].Text())
	list, _ := e.List(ws.ID, false)
	fmt.Println("listed sessions:", len(list))
	_ = e.Shutdown(context.Background(), engine.Drain)
	// Output:
	// created on disk: true
	// continued the same: true created: false
	// opened the same: true
	// in memory: forgotten
	// listed sessions: 1
}
