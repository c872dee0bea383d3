package engine_test

import (
	"context"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/provider/providertest"
)

// A provider configured from OPENAI_API_KEY or ANTHROPIC_API_KEY alone
// sends its requests to OPENAI_BASE_URL or ANTHROPIC_BASE_URL when set, as
// the official SDKs do: no config.json is needed behind a gateway.
func TestEnvironmentProvidersHonourTheirBaseURLVariables(t *testing.T) {
	oa := providertest.NewOpenAIServer(t, providertest.OpenAIText("from openai"))
	an := providertest.NewAnthropicServer(t, providertest.AnthropicText("from anthropic"))
	env := map[string]string{
		"OPENAI_API_KEY": "k1", "OPENAI_BASE_URL": oa.URL + "/v1/",
		"ANTHROPIC_API_KEY": "k2", "ANTHROPIC_BASE_URL": an.URL,
	}
	e, err := engine.New(engine.Options{DataRoot: t.TempDir(), Getenv: func(k string) string { return env[k] }, NoBackgroundTitles: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), engine.Abort) })
	for _, ref := range []engine.ModelRef{{Provider: "openai", ID: "gpt-5"}, {Provider: "anthropic", ID: "claude-sonnet-4-5"}} {
		s, err := e.CreateSession("", engine.SessionOptions{Model: &ref})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Prompt(engine.PromptInput{RequestID: "r", Text: "hi"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if le := s.Snapshot().State.LastError; le != nil {
			t.Fatalf("%s: %+v", ref.Provider, le)
		}
	}
	if len(oa.Requests()) != 1 || oa.Requests()[0].Path != "/v1/chat/completions" || len(an.Requests()) != 1 || an.Requests()[0].Path != "/v1/messages" {
		t.Fatalf("requests: openai %d, anthropic %d", len(oa.Requests()), len(an.Requests()))
	}
}
