package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider/providertest"
)

// A bash output over toolOutput.maxBytes reaches the model as its start
// and its end with a line naming the path read takes for the rest; the
// history keeps it whole, and read of that path, under the session's
// permission, serves any of its lines.
func TestLongToolOutputGoesToTheModelCutAndReadServesTheRest(t *testing.T) {
	srv := providertest.NewOpenAIServer(t,
		providertest.OpenAIToolCall("c1", "bash", `{"command":"seq 1 5000"}`),
		providertest.OpenAIToolCall("c2", "read", `{"path":"loop:tool-output/2","offset":2500,"limit":2}`),
		providertest.OpenAIText("done"),
	)
	root := t.TempDir()
	cfg := `{"providers":{"oa":{"api":"openai","baseUrl":"` + srv.URL + `/v1","titles":false,"retry":{"attempts":1},"models":[{"id":"m","contextWindow":100000}]}},` +
		`"toolOutput":{"maxBytes":4096},"defaults":{"model":{"provider":"oa","id":"m"},"permission":"workspace-write"}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Options{DataRoot: root, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	ws, err := e.AddWorkspace(t.TempDir(), "w")
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.NewSession(ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "count"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	msgs := s.Snapshot().State.Messages
	if len(msgs) != 6 {
		t.Fatalf("%d messages", len(msgs))
	}
	if out := msgs[2].Text(); !strings.Contains(out, "\n2500\n") || !strings.Contains(out, "\n5000\n") {
		t.Fatalf("the history's bash output is not whole: %d bytes, ending %q", len(out), out[len(out)-40:])
	}
	if got := msgs[4].Text(); msgs[4].IsError || !strings.HasPrefix(got, "2500\t2500\n2501\t2501\n") {
		t.Fatalf("read of the output: %q", got)
	}
	reqs := srv.Requests()
	body := string(reqs[1].Body)
	if !strings.Contains(body, `read path \"loop:tool-output/2\" with offset=`) || strings.Contains(body, `\n2500\n`) ||
		!strings.Contains(body, `1\n2\n3\n`) || !strings.Contains(body, `\n4999\n5000\n`) || !strings.Contains(body, `[exit code 0]`) {
		t.Fatalf("the model got the output as:\n%.3000s", body)
	}
}
