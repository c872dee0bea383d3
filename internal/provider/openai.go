package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/loopdev/loop/convo"
)

// DefaultOpenAIBaseURL is the base URL of api "openai" when none is set.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

type openAI struct {
	name string
	url  string
	key  string
	t    transport
}

// NewOpenAI returns a client for OpenAI-compatible chat completions
// (OpenAI, Ollama, OpenRouter, DeepSeek, vLLM, llama.cpp, ...). It posts
// to {BaseURL}/chat/completions.
func NewOpenAI(cfg Config) Provider {
	base := cfg.BaseURL
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	name := cfg.Name
	if name == "" {
		name = APIOpenAI
	}
	return &openAI{
		name: name,
		url:  endpoint(base, "/chat/completions", false),
		key:  cfg.APIKey,
		t:    newTransport(cfg),
	}
}

func (c *openAI) Stream(ctx context.Context, req Request, onDelta func(Delta)) (convo.Message, error) {
	b := newBuilder(c.name, req.Model, onDelta)
	body, err := EncodeBody(openAIRequestBody(req))
	if err != nil {
		return b.fail(ctx, fmt.Errorf("encode chat completions request: %w", err))
	}
	headers := map[string]string{}
	if c.key != "" {
		headers["Authorization"] = "Bearer " + c.key
	}
	st := &openAIStream{b: b}
	if err := c.t.stream(ctx, c.url, headers, body, st.read, req.OnRetry); err != nil {
		return b.fail(ctx, err)
	}
	switch st.finish {
	case "length":
		return b.finish(convo.StopLength)
	case "tool_calls", "function_call":
		return b.finish(convo.StopToolUse)
	case "content_filter":
		return b.fail(ctx, &Error{Kind: KindProvider, Message: "the provider's content filter stopped the reply"})
	default:
		return b.finish(convo.StopEnd)
	}
}

// openAIChunk is one "data:" event of a chat completions stream.
type openAIChunk struct {
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"` // DeepSeek, vLLM, llama.cpp
			Reasoning        string `json:"reasoning"`         // OpenRouter, Ollama
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		TotalTokens         int `json:"total_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	// OpenRouter and others report failures inside a 200 stream.
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type openAIStream struct {
	b      *builder
	finish string
	calls  map[int]int // the stream's tool call index -> block index
	ids    map[int]string
}

// read consumes the stream until "data: [DONE]". A stream that ends
// without [DONE] is complete only if it sent a finish_reason.
func (s *openAIStream) read(r io.Reader) error {
	sse := newSSEReader(r)
	for {
		ev, err := sse.next()
		if err != nil {
			// Some OpenAI-compatible servers end after the finish_reason
			// without [DONE]: a clean end there is complete; a broken
			// connection never is.
			if s.finish != "" && errors.Is(err, io.EOF) {
				return nil
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return truncatedError(err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if string(data) == "[DONE]" {
			return nil
		}
		var c openAIChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return &Error{Kind: KindProvider, Message: "unreadable stream event: " + err.Error(), Err: err}
		}
		if err := s.apply(&c); err != nil {
			return err
		}
	}
}

func (s *openAIStream) apply(c *openAIChunk) error {
	if c.Error != nil {
		return &Error{Kind: KindProvider, Message: c.Error.Message}
	}
	if u := c.Usage; u != nil {
		cached := 0
		if u.PromptTokensDetails != nil {
			cached = u.PromptTokensDetails.CachedTokens
		}
		s.b.usage = convo.Usage{
			Input:       u.PromptTokens - cached,
			Output:      u.CompletionTokens,
			CacheRead:   cached,
			TotalTokens: u.TotalTokens,
		}
	}
	if len(c.Choices) == 0 {
		return nil
	}
	ch := &c.Choices[0]
	d := &ch.Delta
	if d.ReasoningContent != "" {
		s.b.appendText(convo.BlockThinking, d.ReasoningContent)
	} else if d.Reasoning != "" {
		s.b.appendText(convo.BlockThinking, d.Reasoning)
	}
	s.b.appendText(convo.BlockText, d.Content)
	for _, tc := range d.ToolCalls {
		if s.calls == nil {
			s.calls, s.ids = map[int]int{}, map[int]string{}
		}
		blk, ok := s.calls[tc.Index]
		// Some servers send every call complete with index 0: a new id
		// at a known index is a new call.
		if !ok || (tc.ID != "" && s.ids[tc.Index] != "" && tc.ID != s.ids[tc.Index]) {
			blk = s.b.startToolCall(tc.ID, tc.Function.Name)
			s.calls[tc.Index], s.ids[tc.Index] = blk, tc.ID
		} else {
			cur := &s.b.msg.Content[blk]
			if cur.ID == "" && tc.ID != "" {
				cur.ID, s.ids[tc.Index] = tc.ID, tc.ID
			}
			if cur.Name == "" {
				cur.Name = tc.Function.Name
			}
		}
		s.b.addArgs(blk, tc.Function.Arguments)
	}
	if ch.FinishReason != "" {
		s.finish = ch.FinishReason
	}
	return nil
}
