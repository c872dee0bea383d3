package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/loopdev/loop/convo"
)

// DefaultAnthropicBaseURL is the base URL of api "anthropic" when none is set.
const DefaultAnthropicBaseURL = "https://api.anthropic.com"

// AnthropicVersion is the anthropic-version header every request carries.
const AnthropicVersion = "2023-06-01"

type anthropic struct {
	name string
	url  string
	key  string
	t    transport
}

// NewAnthropic returns a client for the Anthropic messages API. It posts to
// {BaseURL}/v1/messages, or to {BaseURL}/messages when BaseURL already ends
// in /v1, so both "https://api.anthropic.com" and ".../v1" work.
func NewAnthropic(cfg Config) Provider {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultAnthropicBaseURL
	}
	url := endpoint(base, "/v1/messages", true)
	name := cfg.Name
	if name == "" {
		name = APIAnthropic
	}
	return &anthropic{name: name, url: url, key: cfg.APIKey, t: newTransport(cfg)}
}

func (c *anthropic) Stream(ctx context.Context, req Request, onDelta func(Delta)) (convo.Message, error) {
	b := newBuilder(c.name, req.Model, onDelta)
	body, err := EncodeBody(anthropicRequestBody(req))
	if err != nil {
		return b.fail(ctx, fmt.Errorf("encode messages request: %w", err))
	}
	headers := map[string]string{"anthropic-version": AnthropicVersion}
	if c.key != "" {
		headers["x-api-key"] = c.key
	}
	var st *anthropicStream
	read := func(r io.Reader) error {
		// Each attempt reads its stream from a clean state. An attempt
		// before this one was answered (message_start may have reported
		// its input) and then retried: its usage is a call of its own.
		if st != nil {
			b.retry(req.AttemptUsage)
		}
		st = &anthropicStream{b: b, blocks: map[int]*anthropicBlockState{}}
		return st.read(r)
	}
	if err := c.t.stream(ctx, c.url, headers, body, read, req.OnRetry); err != nil {
		return b.fail(ctx, err)
	}
	switch st.stopReason {
	case "max_tokens", "model_context_window_exceeded":
		return b.finish(convo.StopLength)
	case "tool_use":
		return b.finish(convo.StopToolUse)
	default: // end_turn, stop_sequence, pause_turn, refusal
		return b.finish(convo.StopEnd)
	}
}

type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

type anthropicEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Usage anthropicUsage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock *struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthropicUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// anthropicBlockState follows one content block of the stream. Text and
// thinking blocks get their message block at their first content, so that
// empty blocks never reach the history.
type anthropicBlockState struct {
	typ       string // convo.BlockText, convo.BlockThinking, convo.BlockToolCall, or "" (ignored)
	idx       int    // block index in the message, -1 until created
	input     json.RawMessage
	sawDeltas bool
}

type anthropicStream struct {
	b          *builder
	blocks     map[int]*anthropicBlockState
	stopReason string
}

// read consumes the stream until message_stop; without it the stream was
// cut, whatever came before.
func (s *anthropicStream) read(r io.Reader) error {
	return readTypedEvents(r, func(e *anthropicEvent, name string) (bool, error) {
		if e.Type == "" {
			e.Type = name
		}
		return s.apply(e)
	})
}

func (s *anthropicStream) apply(e *anthropicEvent) (done bool, err error) {
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			s.setUsage(e.Message.Usage)
		}
	case "content_block_start":
		if e.ContentBlock != nil {
			s.start(e.Index, e)
		}
	case "content_block_delta":
		if e.Delta != nil {
			s.delta(e.Index, e)
		}
	case "content_block_stop":
		st := s.blocks[e.Index]
		if st != nil && st.typ == convo.BlockToolCall && !st.sawDeltas {
			// Some compatible servers send the whole input at the start.
			if in := bytes.TrimSpace(st.input); len(in) > 0 && string(in) != "{}" {
				s.b.addArgs(st.idx, string(in))
			}
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			s.stopReason = e.Delta.StopReason
		}
		if e.Usage != nil {
			s.setUsage(*e.Usage)
		}
	case "message_stop":
		return true, nil
	case "error":
		typ, msg := "error", ""
		if e.Error != nil {
			typ, msg = e.Error.Type, e.Error.Message
		}
		return false, &Error{
			Kind:         KindProvider,
			Message:      strings.TrimPrefix(typ+": "+msg, ": "),
			Retryable:    typ == "overloaded_error" || typ == "api_error" || typ == "rate_limit_error",
			beforeOutput: len(s.blocks) == 0,
		}
	}
	return false, nil // ping and events this client does not use
}

func (s *anthropicStream) start(i int, e *anthropicEvent) {
	cb := e.ContentBlock
	st := &anthropicBlockState{idx: -1}
	s.blocks[i] = st
	switch cb.Type {
	case "text":
		st.typ = convo.BlockText
		s.addText(st, cb.Text)
	case "thinking":
		st.typ = convo.BlockThinking
		s.addText(st, cb.Thinking)
		if cb.Signature != "" {
			s.ensure(st)
			s.b.msg.Content[st.idx].Signature = cb.Signature
		}
	case "redacted_thinking":
		// Kept as a thinking block whose Data holds the encrypted
		// content, to be sent back verbatim.
		st.typ = convo.BlockThinking
		s.ensure(st)
		s.b.msg.Content[st.idx].Data = cb.Data
	case "tool_use":
		st.typ = convo.BlockToolCall
		st.idx = s.b.startToolCall(cb.ID, cb.Name)
		st.input = cb.Input
	}
}

func (s *anthropicStream) delta(i int, e *anthropicEvent) {
	st := s.blocks[i]
	if st == nil || st.typ == "" {
		return
	}
	d := e.Delta
	switch d.Type {
	case "text_delta":
		s.addText(st, d.Text)
	case "thinking_delta":
		s.addText(st, d.Thinking)
	case "signature_delta":
		s.ensure(st)
		s.b.msg.Content[st.idx].Signature += d.Signature
	case "input_json_delta":
		if st.typ == convo.BlockToolCall {
			st.sawDeltas = true
			s.b.addArgs(st.idx, d.PartialJSON)
		}
	}
}

func (s *anthropicStream) ensure(st *anthropicBlockState) {
	if st.idx < 0 {
		st.idx = s.b.newBlock(st.typ)
	}
}

func (s *anthropicStream) addText(st *anthropicBlockState, text string) {
	if text == "" || (st.typ != convo.BlockText && st.typ != convo.BlockThinking) {
		return
	}
	s.ensure(st)
	s.b.addText(st.idx, text)
}

// setUsage merges a usage report: message_start carries the input side,
// message_delta the cumulative output (and sometimes the input again).
func (s *anthropicStream) setUsage(u anthropicUsage) {
	if u.InputTokens > 0 {
		s.b.usage.Input = u.InputTokens
	}
	if u.OutputTokens > 0 {
		s.b.usage.Output = u.OutputTokens
	}
	if u.CacheReadInputTokens > 0 {
		s.b.usage.CacheRead = u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens > 0 {
		s.b.usage.CacheWrite = u.CacheCreationInputTokens
	}
}
