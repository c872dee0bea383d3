package provider_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/provider/providertest"
)

var hi = provider.Request{Model: "m", Messages: []convo.Message{{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "hi"}}}}}

func retrying(srv *providertest.Server, attempts int) provider.Provider {
	cfg := srv.Config()
	cfg.MaxAttempts = attempts
	p, err := provider.New(cfg)
	if err != nil {
		panic(err)
	}
	return p
}

func TestHTTPErrorBody(t *testing.T) {
	srv := providertest.NewServer(t, provider.APIOpenAI, providertest.Response{
		Status: 400,
		Body:   `{"error":{"message":"Invalid 'messages[1].content': string too long.","type":"invalid_request_error","param":"messages[1].content","code":"string_above_max_length"}}`,
	})
	msg, err := retrying(srv, 3).Stream(context.Background(), hi, nil)
	var perr *provider.Error
	if !errors.As(err, &perr) {
		t.Fatalf("err = %v", err)
	}
	if perr.Kind != provider.KindHTTP || perr.Status != 400 || perr.Retryable ||
		perr.Message != "Invalid 'messages[1].content': string too long." {
		t.Errorf("err = %#v", perr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("a 400 was retried: %d requests", n)
	}
	if msg.StopReason != convo.StopError || msg.ErrorMessage != err.Error() || len(msg.Content) != 0 {
		t.Errorf("message = %+v", msg)
	}
}

func TestHTTPErrorBodies(t *testing.T) {
	for body, want := range map[string]string{
		`{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`: "max_tokens: Field required",                   // Anthropic
		`{"error":"model \"nope\" not found, try pulling it first"}`:                                       `model "nope" not found, try pulling it first`, // Ollama
		`{"message":"Not Found"}`: "Not Found",
		`upstream connect error`:  "upstream connect error",
		``:                        "Not Found",
	} {
		srv := providertest.NewServer(t, provider.APIAnthropic, providertest.Response{Status: 404, Body: body, Header: map[string]string{"Content-Type": "text/plain"}})
		_, err := srv.Provider().Stream(context.Background(), hi, nil)
		var perr *provider.Error
		if !errors.As(err, &perr) || perr.Message != want || perr.Status != 404 {
			t.Errorf("body %q: err = %v, want message %q", body, err, want)
		}
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	srv := providertest.NewServer(t, provider.APIOpenAI, providertest.Response{
		Status: 401,
		Body:   `{"error":{"message":"Incorrect API key provided: ` + providertest.TestKey + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","code":"invalid_api_key"}}`,
	})
	msg, err := srv.Provider().Stream(context.Background(), hi, nil)
	if err == nil || strings.Contains(err.Error(), providertest.TestKey) || strings.Contains(msg.ErrorMessage, providertest.TestKey) {
		t.Errorf("key leaked: %v", err)
	}
	if !strings.Contains(err.Error(), "Incorrect API key provided: [REDACTED].") {
		t.Errorf("err = %v", err)
	}

	// A key inside the base URL (some gateways want it there) stays out of network errors.
	cfg := provider.Config{API: provider.APIOpenAI, BaseURL: "http://" + closedAddr(t) + "/" + providertest.TestKey, APIKey: providertest.TestKey, MaxAttempts: 1}
	_, err = provider.NewOpenAI(cfg).Stream(context.Background(), hi, nil)
	if err == nil || strings.Contains(err.Error(), providertest.TestKey) {
		t.Errorf("key leaked: %v", err)
	}
}

func TestRetry429WithRetryAfter(t *testing.T) {
	srv := providertest.NewServer(t, provider.APIOpenAI,
		providertest.Response{Status: 429, Header: map[string]string{"Retry-After": "0"}, Body: `{"error":{"message":"Rate limit reached"}}`},
		providertest.SSE(providertest.OpenAIText("after ", "waiting")),
	)
	msg, err := retrying(srv, 3).Stream(context.Background(), hi, nil)
	if err != nil || msg.Text() != "after waiting" {
		t.Fatalf("text %q err %v", msg.Text(), err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestRetryServerErrors(t *testing.T) {
	for _, status := range []int{500, 502, 503, 504, 529} {
		srv := providertest.NewServer(t, provider.APIAnthropic,
			providertest.Response{Status: status, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			providertest.SSE(providertest.AnthropicText("fine")),
		)
		msg, err := retrying(srv, 2).Stream(context.Background(), hi, nil)
		if err != nil || msg.Text() != "fine" || len(srv.Requests()) != 2 {
			t.Errorf("status %d: text %q err %v requests %d", status, msg.Text(), err, len(srv.Requests()))
		}
	}
}

func TestRetriesExhausted(t *testing.T) {
	r := providertest.Response{Status: 503, Body: `{"error":{"message":"busy"}}`}
	srv := providertest.NewServer(t, provider.APIOpenAI, r, r, r, r)
	_, err := retrying(srv, 3).Stream(context.Background(), hi, nil)
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Status != 503 || !perr.Retryable || perr.Message != "busy" {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestRetryAfterTooLongFailsAtOnce(t *testing.T) {
	srv := providertest.NewServer(t, provider.APIOpenAI,
		providertest.Response{Status: 429, Header: map[string]string{"Retry-After": "3600"}, Body: `{"error":{"message":"quota"}}`},
		providertest.SSE(providertest.OpenAIText("never")),
	)
	_, err := retrying(srv, 3).Stream(context.Background(), hi, nil)
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Status != 429 || !perr.Retryable {
		t.Fatalf("err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// closedAddr returns an address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestConnectionRefusedRetried(t *testing.T) {
	var dials atomic.Int32
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	cfg := provider.Config{API: provider.APIAnthropic, BaseURL: "http://" + closedAddr(t), APIKey: "k",
		HTTPClient: client, MaxAttempts: 3, RetryBaseDelay: time.Millisecond}
	msg, err := provider.NewAnthropic(cfg).Stream(context.Background(), hi, nil)
	var perr *provider.Error
	if !errors.As(err, &perr) || perr.Kind != provider.KindNetwork || !perr.Retryable || !strings.Contains(perr.Message, "connection refused") {
		t.Fatalf("err = %v", err)
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("%d dials, want 3", n)
	}
	if msg.StopReason != convo.StopError {
		t.Errorf("stop = %q", msg.StopReason)
	}
}

func TestNoRetryAfterFirstByte(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, fixture(t, "openai_truncated.sse"), providertest.OpenAIText("second"))
	msg, err := retrying(srv, 3).Stream(context.Background(), hi, nil)
	if !errors.Is(err, provider.ErrTruncated) || msg.Text() != "Hello, wor" {
		t.Fatalf("text %q err %v", msg.Text(), err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests after output streamed, want 1", n)
	}
}

func TestEmptyBodyRetried(t *testing.T) {
	srv := providertest.NewOpenAIServer(t, "", providertest.OpenAIText("second"))
	msg, err := retrying(srv, 2).Stream(context.Background(), hi, nil)
	if err != nil || msg.Text() != "second" || len(srv.Requests()) != 2 {
		t.Fatalf("text %q err %v requests %d", msg.Text(), err, len(srv.Requests()))
	}
	// Out of attempts, an empty body is a truncated stream.
	srv = providertest.NewOpenAIServer(t, "")
	if _, err := srv.Provider().Stream(context.Background(), hi, nil); !errors.Is(err, provider.ErrTruncated) {
		t.Fatalf("err = %v", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	for api, body := range map[string]string{
		provider.APIOpenAI:          providertest.OpenAIText("Hello", " there"),
		provider.APIOpenAIResponses: providertest.ResponsesText("Hello", " there"),
		provider.APIAnthropic:       providertest.AnthropicText("Hello", " there"),
	} {
		t.Run(api, func(t *testing.T) {
			body = body[:strings.Index(body, " there")] // stall after the first text
			body = body[:strings.LastIndex(body, "\n\n")+2]
			srv := providertest.NewServer(t, api, providertest.Response{Body: body, Hang: true})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			msg, err := retrying(srv, 3).Stream(ctx, hi, func(d provider.Delta) {
				if d.Kind == provider.DeltaText {
					cancel()
				}
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
			if msg.Text() != "Hello" || msg.StopReason != convo.StopAborted {
				t.Errorf("partial %q stop %q", msg.Text(), msg.StopReason)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	srv := providertest.NewServer(t, provider.APIOpenAI, providertest.Response{Status: 503, Body: "{}"})
	cfg := srv.Config()
	cfg.MaxAttempts, cfg.RetryBaseDelay = 5, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(srv.Requests()) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := provider.NewOpenAI(cfg).Stream(ctx, hi, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// A short key is redacted where it stands alone, not inside every word
// that contains its letters.
func TestShortKeyIsRedactedOnlyAsAWholeWord(t *testing.T) {
	srv := providertest.NewServer(t, provider.APIOpenAI, providertest.Response{
		Status: 401,
		Body:   `{"error":{"message":"Incorrect API key provided: e. Please check the key.","type":"invalid_request_error"}}`,
	})
	cfg := srv.Config()
	cfg.APIKey = "e"
	cfg.MaxAttempts = 1
	_, err := provider.NewOpenAI(cfg).Stream(context.Background(), hi, nil)
	if err == nil || !strings.Contains(err.Error(), "Incorrect API key provided: [REDACTED]. Please check the key.") {
		t.Fatalf("err = %v", err)
	}
}

func TestOnRetryHearsOfEachRetryBeforeItsWait(t *testing.T) {
	for _, api := range []string{provider.APIOpenAI, provider.APIAnthropic, provider.APIOpenAIResponses} {
		text := map[string]string{
			provider.APIOpenAI:          providertest.OpenAIText("fine"),
			provider.APIAnthropic:       providertest.AnthropicText("fine"),
			provider.APIOpenAIResponses: providertest.ResponsesText("fine"),
		}[api]
		srv := providertest.NewServer(t, api,
			providertest.Response{Status: 500, Body: `{"error":{"message":"upstream exploded"}}`},
			providertest.Response{Status: 503, Header: map[string]string{"Retry-After": "0"}, Body: `{"error":{"message":"busy"}}`},
			providertest.SSE(text),
		)
		var got []provider.Retry
		req := hi
		req.OnRetry = func(r provider.Retry) { got = append(got, r) }
		msg, err := retrying(srv, 4).Stream(context.Background(), req, nil)
		if err != nil || msg.Text() != "fine" {
			t.Fatalf("%s: text %q err %v", api, msg.Text(), err)
		}
		var perr *provider.Error
		if len(got) != 2 || got[0].Attempt != 2 || got[0].Of != 4 || got[1].Attempt != 3 || got[1].Delay != 0 ||
			!errors.As(got[0].Err, &perr) || perr.Status != 500 || !strings.Contains(got[0].Err.Error(), "upstream exploded") {
			t.Fatalf("%s: retries %+v", api, got)
		}
	}
}
