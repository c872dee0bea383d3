// Package provider holds Loop's model clients: OpenAI-compatible chat
// completions, the OpenAI Responses API, the Anthropic messages API, a scripted model for tests and
// the offline demo model. All of them stream one assistant reply for a
// request built from the session's history (convo.Message).
package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/redact"
)

// Tool is a tool the model may call.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage // JSON Schema of the arguments; nil means an empty object
}

// Efforts, in increasing order of reasoning. "default" leaves the choice to
// the provider; "off" asks for no reasoning at all.
const (
	EffortDefault = "default"
	EffortOff     = "off"
	EffortMinimal = "minimal"
	EffortLow     = "low"
	EffortMedium  = "medium"
	EffortHigh    = "high"
	EffortXHigh   = "xhigh"
	EffortMax     = "max"
)

// Efforts lists every effort value a request may carry.
func Efforts() []string {
	return []string{EffortDefault, EffortOff, EffortMinimal, EffortLow, EffortMedium, EffortHigh, EffortXHigh, EffortMax}
}

// ValidEffort reports whether e is one of Efforts (the empty string counts
// as "default").
func ValidEffort(e string) bool {
	if e == "" {
		return true
	}
	for _, v := range Efforts() {
		if v == e {
			return true
		}
	}
	return false
}

// Purposes of a request. Real providers ignore them; the scripted and demo
// models use them so that title or summary calls do not consume the turns
// scripted for the main conversation.
const (
	PurposeMain    = ""
	PurposeTitle   = "title"
	PurposeSummary = "summary"
)

// Request is one model call.
type Request struct {
	Model           string
	System          string
	Messages        []convo.Message
	Tools           []Tool
	MaxOutputTokens int    // 0: the client's default
	Effort          string // one of Efforts; "" means "default"
	Purpose         string // PurposeMain, PurposeTitle or PurposeSummary
	// CacheKey names the conversation for the provider's prompt cache
	// (OpenAI's prompt_cache_key): a session's requests share one, so
	// they reach the servers holding their prefix. "": none.
	CacheKey string
	// AttemptUsage, if not nil, gets the usage of each attempt that the
	// provider answered and reported usage for, and that was then retried
	// (a retryable error event before any output): a call the reply's own
	// Usage does not include. It is called on the Stream goroutine.
	AttemptUsage func(convo.Usage) `json:"-"`
	// OnRetry, if not nil, hears of each retry before its backoff starts:
	// the failed attempt's error and when the next is sent. It is called
	// on the Stream goroutine and must not block.
	OnRetry func(Retry) `json:"-"`
}

// Retry is a failed attempt that is about to be sent again.
type Retry struct {
	Attempt int           // the attempt about to be sent: 2 for the first retry
	Of      int           // the most attempts the request gets
	Delay   time.Duration // the wait before it: the backoff, or the provider's Retry-After
	Err     error         // why the previous attempt failed (an *Error, without secrets)
}

// DeltaKind names what a Delta carries.
type DeltaKind string

const (
	DeltaText     DeltaKind = "text"
	DeltaThinking DeltaKind = "thinking"
	DeltaToolCall DeltaKind = "toolCall" // a tool call block starts: ToolCallID and ToolName are set
	DeltaToolArgs DeltaKind = "toolArgs" // a fragment of a tool call's argument JSON
)

// Delta is one piece of streamed output.
type Delta struct {
	Kind       DeltaKind
	Block      int // index of the block in the assistant message's Content
	Text       string
	ToolCallID string
	ToolName   string
}

// Provider streams one assistant reply.
type Provider interface {
	// Stream sends req and calls onDelta for each piece of output as it
	// arrives, on the calling goroutine (onDelta may be nil).
	//
	// On success it returns the complete assistant message: Role assistant,
	// Content blocks text/thinking/toolCall (Arguments always valid JSON),
	// Usage, StopReason (convo.StopEnd, StopLength or StopToolUse), Provider
	// and Model.
	//
	// On failure it returns what streamed before the failure (possibly no
	// blocks) with StopReason convo.StopError (convo.StopAborted when ctx
	// ended) and ErrorMessage set, and the error: an *Error, or ctx.Err()
	// when ctx ended. A stream cut before its end marker is an error
	// matching ErrTruncated, never a short answer.
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (convo.Message, error)
}

// APIs a Config may name.
const (
	APIOpenAI          = "openai"
	APIOpenAIResponses = "openai-responses"
	APIAnthropic       = "anthropic"
	APIScripted        = "scripted"
	APIDemo            = "demo"
)

// Config configures one provider. It mirrors a "providers" entry of
// config.json, with the key already resolved from its environment variable.
type Config struct {
	Name    string // the provider's name in config.json; copied into replies
	API     string // APIOpenAI, APIOpenAIResponses, APIAnthropic, APIScripted or APIDemo
	BaseURL string // "" means the API's public endpoint
	APIKey  string // never logged, never part of an error
	Headers map[string]string
	// Secrets are removed from every error the provider returns, in every
	// spelling (redact.Set): the engine gives each provider all the
	// configuration's secrets, APIKey among them. nil: APIKey, the
	// credentials BaseURL carries and the values of credential headers.
	Secrets *redact.Set

	// Script is the scripted model's script file (API "scripted").
	Script string

	HTTPClient *http.Client // nil: a plain client without timeout (streams are long)

	// MaxAttempts bounds how often one request is sent when it fails before
	// any response body arrived. 0 means DefaultMaxAttempts; 1 means never
	// retry.
	MaxAttempts int
	// RetryBaseDelay is the first backoff delay; it doubles on every retry
	// (capped at MaxRetryDelay). 0 means DefaultRetryBaseDelay.
	RetryBaseDelay time.Duration
}

// Retry defaults.
const (
	DefaultMaxAttempts    = 4
	DefaultRetryBaseDelay = time.Second
	// MaxRetryDelay caps the backoff. A Retry-After longer than this is not
	// waited for: the request fails at once with a retryable *Error.
	MaxRetryDelay = 60 * time.Second
)
