package provider

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/loopdev/loop/convo"
)

type responses struct {
	name string
	url  string
	key  string
	t    transport
}

// NewResponses returns a client for the OpenAI Responses API. It posts to
// {BaseURL}/responses (BaseURL defaults to DefaultOpenAIBaseURL) with
// store false, and carries the model's reasoning from one request to the
// next as encrypted reasoning items kept in the history.
func NewResponses(cfg Config) Provider {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	name := cfg.Name
	if name == "" {
		name = APIOpenAIResponses
	}
	return &responses{name: name, url: endpoint(base, "/responses", false), key: cfg.APIKey, t: newTransport(cfg)}
}

func (c *responses) Stream(ctx context.Context, req Request, onDelta func(Delta)) (convo.Message, error) {
	b := newBuilder(c.name, req.Model, onDelta)
	body, err := EncodeBody(responsesRequestBody(req))
	if err != nil {
		return b.fail(ctx, fmt.Errorf("encode responses request: %w", err))
	}
	headers := map[string]string{}
	if c.key != "" {
		headers["Authorization"] = "Bearer " + c.key
	}
	var st *responsesStream
	read := func(r io.Reader) error {
		// Each attempt reads its stream from a clean state; the usage of
		// an answered attempt that is retried is a call of its own.
		if st != nil {
			b.retry(req.AttemptUsage)
		}
		st = &responsesStream{b: b, items: map[int]*responsesItemState{}}
		return st.read(r)
	}
	if err := c.t.stream(ctx, c.url, headers, body, read, req.OnRetry); err != nil {
		return b.fail(ctx, err)
	}
	switch st.incomplete {
	case "":
		return b.finish(convo.StopEnd) // finish makes it toolUse when the reply has calls
	case "max_output_tokens":
		return b.finish(convo.StopLength)
	case "content_filter":
		return b.fail(ctx, &Error{Kind: KindProvider, Message: "the provider's content filter stopped the reply"})
	default:
		return b.fail(ctx, &Error{Kind: KindProvider, Message: "the reply is incomplete: " + st.incomplete})
	}
}

// responsesItem is an output item as the stream shows it.
type responsesItem struct {
	Type             string `json:"type"` // "message", "reasoning", "function_call", ...
	ID               string `json:"id"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	EncryptedContent string `json:"encrypted_content"`
	Summary          []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	TotalTokens        int `json:"total_tokens"`
	InputTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

type responsesError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// responsesEvent is one event of a Responses stream; each type fills the
// members it has.
type responsesEvent struct {
	Type         string         `json:"type"`
	OutputIndex  int            `json:"output_index"`
	SummaryIndex int            `json:"summary_index"`
	Delta        string         `json:"delta"`
	Arguments    string         `json:"arguments"`
	Item         *responsesItem `json:"item"`
	Response     *struct {
		Usage             *responsesUsage `json:"usage"`
		Error             *responsesError `json:"error"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	} `json:"response"`
	// The "error" event's own members.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// responsesItemState follows one output item. Text and reasoning get
// their block at their first content, so empty ones never reach the
// history; a reasoning item without summary gets it when it is done.
type responsesItemState struct {
	typ     string // convo.BlockText, convo.BlockThinking, convo.BlockToolCall, or "" (ignored)
	idx     int    // block index, -1 until created
	summary int    // the summary part the thinking text is in
	sawArgs bool
}

type responsesStream struct {
	b          *builder
	items      map[int]*responsesItemState
	incomplete string // incomplete_details.reason of response.incomplete
}

// read consumes the stream until response.completed or
// response.incomplete; without one of them the stream was cut.
func (s *responsesStream) read(r io.Reader) error {
	return readTypedEvents(r, func(e *responsesEvent, name string) (bool, error) {
		if e.Type == "" {
			e.Type = name
		}
		return s.apply(e)
	})
}

func (s *responsesStream) apply(e *responsesEvent) (done bool, err error) {
	switch e.Type {
	case "response.output_item.added":
		if e.Item != nil {
			s.start(e.OutputIndex, e.Item)
		}
	case "response.output_text.delta", "response.refusal.delta":
		s.addText(s.item(e.OutputIndex, convo.BlockText), e.Delta)
	case "response.reasoning_summary_text.delta":
		st := s.item(e.OutputIndex, convo.BlockThinking)
		if st.typ == convo.BlockThinking && e.SummaryIndex != st.summary && st.idx >= 0 {
			s.b.addText(st.idx, "\n\n")
		}
		st.summary = e.SummaryIndex
		s.addText(st, e.Delta)
	case "response.function_call_arguments.delta":
		if st := s.items[e.OutputIndex]; st != nil && st.typ == convo.BlockToolCall {
			st.sawArgs = true
			s.b.addArgs(st.idx, e.Delta)
		}
	case "response.function_call_arguments.done":
		if st := s.items[e.OutputIndex]; st != nil && st.typ == convo.BlockToolCall && !st.sawArgs {
			st.sawArgs = true
			s.b.addArgs(st.idx, e.Arguments)
		}
	case "response.output_item.done":
		if e.Item != nil {
			s.done(e.OutputIndex, e.Item)
		}
	case "response.completed":
		s.setUsage(e)
		return true, nil
	case "response.incomplete":
		s.setUsage(e)
		s.incomplete = "unknown"
		if e.Response != nil && e.Response.IncompleteDetails != nil && e.Response.IncompleteDetails.Reason != "" {
			s.incomplete = e.Response.IncompleteDetails.Reason
		}
		return true, nil
	case "response.failed":
		s.setUsage(e)
		var re responsesError
		if e.Response != nil && e.Response.Error != nil {
			re = *e.Response.Error
		}
		return false, s.streamError(re)
	case "error":
		return false, s.streamError(responsesError{Code: e.Code, Message: e.Message})
	}
	return false, nil // response.created, response.in_progress, content parts, ... carry nothing Loop keeps
}

// streamError is a failure the provider reported inside the stream. Rate
// limits and server errors are worth another attempt, as their HTTP
// statuses are.
func (s *responsesStream) streamError(re responsesError) *Error {
	msg := strings.TrimPrefix(re.Code+": "+re.Message, ": ")
	if msg == "" {
		msg = "the response failed"
	}
	switch re.Code {
	case "rate_limit_exceeded", "server_error", "server_is_overloaded", "slow_down":
		return &Error{Kind: KindProvider, Message: msg, Retryable: true, beforeOutput: len(s.b.msg.Content) == 0}
	}
	return &Error{Kind: KindProvider, Message: msg}
}

// item returns the state of output item i, for an event that implies its
// type (a server that skipped output_item.added).
func (s *responsesStream) item(i int, typ string) *responsesItemState {
	st := s.items[i]
	if st == nil {
		st = &responsesItemState{typ: typ, idx: -1}
		s.items[i] = st
	}
	return st
}

func (s *responsesStream) start(i int, it *responsesItem) {
	st := &responsesItemState{idx: -1}
	s.items[i] = st
	switch it.Type {
	case "message":
		st.typ = convo.BlockText
	case "reasoning":
		st.typ = convo.BlockThinking
	case "function_call":
		st.typ = convo.BlockToolCall
		st.idx = s.b.startToolCall(it.CallID, it.Name)
		if it.Arguments != "" {
			st.sawArgs = true
			s.b.addArgs(st.idx, it.Arguments)
		}
	}
}

// done completes output item i from its final form: a reasoning item's
// id and encrypted content, and whatever of an item the deltas did not
// bring.
func (s *responsesStream) done(i int, it *responsesItem) {
	st := s.items[i]
	if st == nil {
		s.start(i, it)
		st = s.items[i]
	}
	switch st.typ {
	case convo.BlockThinking:
		if st.idx < 0 {
			var parts []string
			for _, p := range it.Summary {
				if p.Text != "" {
					parts = append(parts, p.Text)
				}
			}
			s.addText(st, strings.Join(parts, "\n\n"))
		}
		if it.EncryptedContent == "" {
			return // nothing to carry; its summary, if any, is kept as thinking
		}
		s.ensure(st)
		blk := &s.b.msg.Content[st.idx]
		blk.ID, blk.Signature = it.ID, it.EncryptedContent
		if blk.ID == "" {
			blk.ID = "rs" // the id marks the block as this API's reasoning item (IsReasoningItem)
		}
	case convo.BlockToolCall:
		if !st.sawArgs {
			st.sawArgs = true
			s.b.addArgs(st.idx, it.Arguments)
		}
		blk := &s.b.msg.Content[st.idx]
		if blk.ID == "" {
			blk.ID = it.CallID
		}
		if blk.Name == "" {
			blk.Name = it.Name
		}
	}
}

func (s *responsesStream) ensure(st *responsesItemState) {
	if st.idx < 0 {
		st.idx = s.b.newBlock(st.typ)
	}
}

func (s *responsesStream) addText(st *responsesItemState, text string) {
	if text == "" || (st.typ != convo.BlockText && st.typ != convo.BlockThinking) {
		return
	}
	s.ensure(st)
	s.b.addText(st.idx, text)
}

// setUsage takes the usage of a finished response. input_tokens counts
// the cached ones too; Loop's Input does not (docs/protocol.md, "Usage").
func (s *responsesStream) setUsage(e *responsesEvent) {
	if e.Response == nil || e.Response.Usage == nil {
		return
	}
	u := e.Response.Usage
	cached := 0
	if u.InputTokensDetails != nil {
		cached = u.InputTokensDetails.CachedTokens
	}
	s.b.usage = convo.Usage{Input: u.InputTokens - cached, Output: u.OutputTokens, CacheRead: cached, TotalTokens: u.TotalTokens}
}
