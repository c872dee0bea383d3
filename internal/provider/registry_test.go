package provider_test

import (
	"testing"

	"github.com/loopdev/loop/internal/provider"
)

// TestConfigAPIsAreCheckedByTheRegistry: config.json's "api" is checked
// against the registry, with the messages docs/configuration.md's readers
// have always got; the demo is no API a providers entry may name.
func TestConfigAPIsAreCheckedByTheRegistry(t *testing.T) {
	for _, c := range []struct {
		cfg  provider.Config
		want string
	}{
		{provider.Config{API: provider.APIOpenAI}, ""},
		{provider.Config{API: provider.APIOpenAIResponses}, ""},
		{provider.Config{API: provider.APIAnthropic}, ""},
		{provider.Config{API: provider.APIScripted, Script: "s.json"}, ""},
		{provider.Config{API: provider.APIScripted}, `api "scripted" needs "script"`},
		{provider.Config{}, `missing "api" (openai, openai-responses, anthropic or scripted)`},
		{provider.Config{API: "gemini"}, `unknown api "gemini" (want openai, openai-responses, anthropic or scripted)`},
		{provider.Config{API: provider.APIDemo}, `unknown api "demo" (want openai, openai-responses, anthropic or scripted)`},
	} {
		err := provider.CheckConfig(c.cfg)
		if got := errText(err); got != c.want {
			t.Errorf("api %q: got %q, want %q", c.cfg.API, got, c.want)
		}
	}
	if _, err := provider.New(provider.Config{Name: "x", API: "gemini"}); errText(err) != `provider "x": unknown api "gemini" (want openai, openai-responses, anthropic, scripted or demo)` {
		t.Errorf("New with an unknown api: %v", err)
	}
}

// TestOnlyHTTPAPIsAreReplayable: a trace records the bodies of the HTTP
// APIs, so only their calls can be replayed; the scripted and demo models'
// calls are traced as logical requests.
func TestOnlyHTTPAPIsAreReplayable(t *testing.T) {
	for api, want := range map[string]bool{provider.APIOpenAI: true, provider.APIOpenAIResponses: true, provider.APIAnthropic: true,
		provider.APIScripted: false, provider.APIDemo: false, "gemini": false, "": false} {
		if got := provider.Replayable(api); got != want {
			t.Errorf("Replayable(%q) = %v, want %v", api, got, want)
		}
	}
	if got := provider.JoinOr(provider.APINames(func(a provider.API) bool { return a.Replayable })); got != "openai, openai-responses or anthropic" {
		t.Errorf("replayable APIs: %q", got)
	}
}

// TestScriptedProvidersStartNoBackgroundTitles: a scripted model's
// sessions title themselves only when config.json asks, so that scripts
// stay deterministic; the HTTP APIs' do.
func TestScriptedProvidersStartNoBackgroundTitles(t *testing.T) {
	for api, want := range map[string]bool{provider.APIOpenAI: true, provider.APIOpenAIResponses: true, provider.APIAnthropic: true, provider.APIScripted: false} {
		if a, ok := provider.Lookup(api); !ok || a.Titles != want {
			t.Errorf("%s: registered %v, titles %v, want %v", api, ok, a.Titles, want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
