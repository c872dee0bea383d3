package provider_test

import (
	"context"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/provider/providertest"
)

// TestRetriedAttemptReportsItsUsage: an Anthropic stream that reported
// its input in message_start and then failed with a retryable error event
// before any output is retried; that first attempt reached the provider,
// so its usage goes to AttemptUsage, and the reply's own usage is the
// second attempt's alone.
func TestRetriedAttemptReportsItsUsage(t *testing.T) {
	overloaded := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":700,\"cache_read_input_tokens\":30,\"output_tokens\":1}}}\n\n" +
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	srv := providertest.NewServer(t, provider.APIAnthropic, providertest.SSE(overloaded), providertest.SSE(providertest.AnthropicText("fine")))
	var attempts []convo.Usage
	req := hi
	req.AttemptUsage = func(u convo.Usage) { attempts = append(attempts, u) }
	msg, err := retrying(srv, 3).Stream(context.Background(), req, nil)
	if err != nil || msg.Text() != "fine" || len(srv.Requests()) != 2 {
		t.Fatalf("text %q err %v requests %d", msg.Text(), err, len(srv.Requests()))
	}
	want := convo.Usage{Input: 700, Output: 1, CacheRead: 30, TotalTokens: 731}
	if len(attempts) != 1 || attempts[0] != want {
		t.Fatalf("AttemptUsage got %+v, want [%+v]", attempts, want)
	}
	if u := msg.Usage; u == nil || u.Input != 12 || u.Output != 5 || u.CacheRead != 0 {
		t.Fatalf("the reply's usage %+v mixes in the retried attempt", msg.Usage)
	}
}
