// Package providertest runs fake model servers on 127.0.0.1 for tests: they
// answer each request with the next canned response (usually an SSE
// stream in the real wire format) and record what they received.
package providertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/provider"
)

// TestKey is the API key Config puts in the providers it configures.
const TestKey = "test-key-0123456789"

// Response is one canned answer.
type Response struct {
	Status int               // 0 means 200
	Header map[string]string // extra response headers
	Body   string            // an SSE stream for 200, an error body otherwise
	// Hang keeps the connection open after Body until the client gives up
	// (or the server closes), like a model that stalls mid-stream.
	Hang bool
}

// SSE is a 200 response streaming body.
func SSE(body string) Response { return Response{Body: body} }

// Request is a request the server received.
type Request struct {
	Method string
	Path   string
	Query  string // the raw query
	Header http.Header
	Body   []byte
}

// Decode unmarshals the request body into v, failing the test on error.
func (r Request) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, r.Body)
	}
}

// Server is a fake model API. Requests beyond the canned responses get a
// 500 whose message says so.
type Server struct {
	URL string // the server's root, e.g. http://127.0.0.1:PORT
	API string // provider.APIOpenAI, provider.APIOpenAIResponses or provider.APIAnthropic

	mu        sync.Mutex
	respond   func(Request) Response // when set, answers every request
	responses []Response
	requests  []Request
	done      chan struct{}
}

// NewServer starts a server for api that gives responses in order. It
// stops when the test ends.
func NewServer(t testing.TB, api string, responses ...Response) *Server {
	t.Helper()
	s := &Server{API: api, responses: responses, done: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = srv.URL
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(s.done) }) // runs first: releases hanging handlers
	return s
}

// NewFuncServer is NewServer answering each request with respond(r),
// which sees every request received so far through Requests: a fake whose
// answer depends on what it was asked (a summary request, say).
func NewFuncServer(t testing.TB, api string, respond func(Request) Response) *Server {
	t.Helper()
	s := NewServer(t, api)
	s.respond = respond
	return s
}

// NewOpenAIServer is NewServer for chat completions, each body a 200 SSE stream.
func NewOpenAIServer(t testing.TB, sseBodies ...string) *Server {
	t.Helper()
	return NewServer(t, provider.APIOpenAI, sseResponses(sseBodies)...)
}

// NewAnthropicServer is NewServer for the messages API, each body a 200 SSE stream.
func NewAnthropicServer(t testing.TB, sseBodies ...string) *Server {
	t.Helper()
	return NewServer(t, provider.APIAnthropic, sseResponses(sseBodies)...)
}

// NewResponsesServer is NewServer for the Responses API, each body a 200 SSE stream.
func NewResponsesServer(t testing.TB, sseBodies ...string) *Server {
	t.Helper()
	return NewServer(t, provider.APIOpenAIResponses, sseResponses(sseBodies)...)
}

func sseResponses(bodies []string) []Response {
	rs := make([]Response, len(bodies))
	for i, b := range bodies {
		rs[i] = SSE(b)
	}
	return rs
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Config returns a provider configuration for this server with TestKey,
// one attempt per request and a tiny retry delay.
func (s *Server) Config() provider.Config {
	base := s.URL
	if s.API == provider.APIOpenAI || s.API == provider.APIOpenAIResponses {
		base += "/v1"
	}
	return provider.Config{
		Name:           "test",
		API:            s.API,
		BaseURL:        base,
		APIKey:         TestKey,
		MaxAttempts:    1,
		RetryBaseDelay: time.Millisecond,
	}
}

// Provider returns a client for this server built from Config.
func (s *Server) Provider() provider.Provider {
	p, err := provider.New(s.Config())
	if err != nil {
		panic(err) // Config always names a known api
	}
	return p
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	var resp Response
	ok := len(s.responses) > 0
	if ok {
		resp, s.responses = s.responses[0], s.responses[1:]
	}
	respond := s.respond
	s.mu.Unlock()
	if respond != nil {
		resp, ok = respond(req), true
	}
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"message":"providertest: no response left for this request"}}`)
		return
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	status := resp.Status
	if status == 0 {
		status = http.StatusOK
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
	} else if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	io.WriteString(w, resp.Body)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if resp.Hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
	}
}
