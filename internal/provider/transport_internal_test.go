package provider

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 9, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{}, -1},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After": {"Mon, 01 Sep 2025 12:00:07 GMT"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"Mon, 01 Sep 2025 11:00:00 GMT"}}, 0}, // in the past
		{http.Header{"Retry-After": {"soon"}}, -1},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
	} {
		if got := retryAfter(tc.header, now); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.header, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	tr := newTransport(Config{RetryBaseDelay: 100 * time.Millisecond})
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 30: MaxRetryDelay} {
		if got := tr.backoff(attempt); got != want {
			t.Errorf("attempt %d: %v, want %v", attempt, got, want)
		}
	}
	if d := newTransport(Config{}); d.attempts != DefaultMaxAttempts || d.base != DefaultRetryBaseDelay {
		t.Errorf("defaults: %d %v", d.attempts, d.base)
	}
}

func TestNormalizeArgs(t *testing.T) {
	for in, want := range map[string]string{
		"":                 `{}`,
		"  ":               `{}`,
		`{ "a" : [1, 2] }`: `{"a":[1,2]}`,
		`{"path": "a.`:     `"{\"path\": \"a."`,
		`not json`:         `"not json"`,
	} {
		if got := string(normalizeArgs(in)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

func TestWireHistoryLeavesInputAlone(t *testing.T) {
	in := []convo.Message{
		{Role: convo.RoleAssistant, Content: []convo.Block{{Type: convo.BlockToolCall, ID: "a", Name: "x", Arguments: json.RawMessage(`{}`)}, {Type: convo.BlockToolCall, ID: "b", Name: "y"}}},
		{Role: convo.RoleToolResult, ToolCallID: "b", ToolName: "y"},
	}
	out := wireHistory(in)
	if len(in[0].Content) != 2 || len(in) != 2 {
		t.Fatal("input modified")
	}
	if len(out) != 3 || out[2].ToolCallID != "a" || !out[2].IsError || out[1].ToolCallID != "b" {
		t.Fatalf("out = %+v", out)
	}
}
