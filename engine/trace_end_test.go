package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/trace"
)

// Every step of a trace ends with an end record (docs/traces.md), a
// reader's only way to tell a step whose last records never reached the
// disk: runs, a compaction and a title asked for. The first run's end
// follows its background title's call, so that a trace holding the end
// holds the title too. Before the first step, the trace records the
// configuration its requests were made with, limits filled in.
func TestTraceEndsEveryStepAndTheFirstRunAfterItsBackgroundTitle(t *testing.T) {
	srv := fakeOpenAI(t)
	root := t.TempDir()
	cfg := `{"providers":{"oa":{"api":"openai","baseUrl":"` + srv.URL + `","apiKeyEnv":"K","headers":{"X-Team":"blue"},"models":[{"id":"gpt-t","contextWindow":50000,"maxOutputTokens":700},{"id":"gpt-u"}]}},` +
		`"compaction":{"reserveTokens":900},"defaults":{"model":{"provider":"oa","id":"gpt-t"}}}`
	e := traceTestEngine(t, root, cfg, Options{Getenv: func(string) string { return "" }})
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	promptAndWait(t, s, "one")
	s.WaitForTitle()
	promptAndWait(t, s, "two")
	if _, err := s.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GenerateTitle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(ctx, Drain); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Read(e.TraceDir("", s.ID()))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Unfinished != "" {
		t.Errorf("unfinished: %s", tr.Unfinished)
	}
	var got []string
	for _, r := range tr.Records {
		switch r.Type {
		case trace.TypeCall:
			got = append(got, "call:"+r.Purpose)
		case trace.TypePrompt:
			got = append(got, "prompt:"+r.Input.Text)
		case trace.TypeEnd:
			got = append(got, fmt.Sprintf("end:%s:%v:%s", r.Step, r.RunID != "", r.Outcome))
		case trace.TypeCompact, trace.TypeTitle, trace.TypeConfig:
			got = append(got, r.Type)
		}
	}
	want := "config prompt:one call:main call:title end:prompt:true:completed prompt:two call:main end:prompt:true:completed " +
		"compact call:summary end:compact:false: title call:title end:title:false:"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("records\n%s\nwant\n%s", g, want)
	}
	var config string
	for _, r := range tr.Records {
		if r.Type == trace.TypeConfig {
			config = string(r.Config)
		}
	}
	wantConfig := `{"providers":{"oa":{"api":"openai","models":[{"id":"gpt-t","name":"gpt-t","contextWindow":50000,"maxOutputTokens":700},` +
		`{"id":"gpt-u","name":"gpt-u","contextWindow":128000,"maxOutputTokens":16384}],"titles":true}},"compaction":{"reserveTokens":900}}`
	if config != wantConfig {
		t.Errorf("config record\n%s\nwant\n%s", config, wantConfig)
	}
}
