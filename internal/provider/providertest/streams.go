package providertest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Builders of realistic SSE streams, for tests that need a reply but not
// a fixture file.

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func openAIChunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = jsonString(finish)
	}
	return fmt.Sprintf(`data: {"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}],"usage":null}`+"\n\n", delta, f)
}

const openAIEnd = `data: {"id":"chatcmpl-test","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}` + "\n\n" +
	"data: [DONE]\n\n"

// OpenAIText is a chat completions stream answering with the parts as
// consecutive content deltas, finish_reason "stop".
func OpenAIText(parts ...string) string {
	var b strings.Builder
	b.WriteString(openAIChunk(`{"role":"assistant","content":""}`, ""))
	for _, p := range parts {
		b.WriteString(openAIChunk(`{"content":`+jsonString(p)+`}`, ""))
	}
	b.WriteString(openAIChunk(`{}`, "stop"))
	b.WriteString(openAIEnd)
	return b.String()
}

// OpenAIToolCall is a chat completions stream calling one tool; args (a
// JSON object) streams in two fragments. finish_reason "tool_calls".
func OpenAIToolCall(id, name, args string) string {
	var b strings.Builder
	b.WriteString(openAIChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":`+jsonString(id)+
		`,"type":"function","function":{"name":`+jsonString(name)+`,"arguments":""}}]}`, ""))
	half := len(args) / 2
	for _, frag := range []string{args[:half], args[half:]} {
		b.WriteString(openAIChunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+jsonString(frag)+`}}]}`, ""))
	}
	b.WriteString(openAIChunk(`{}`, "tool_calls"))
	b.WriteString(openAIEnd)
	return b.String()
}

func anthropicEvent(name, data string) string {
	return "event: " + name + "\ndata: " + data + "\n\n"
}

const anthropicStart = `{"type":"message_start","message":{"id":"msg_test","type":"message","role":"assistant","model":"test-model","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`

func anthropicEnd(stopReason string) string {
	return anthropicEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":`+jsonString(stopReason)+`,"stop_sequence":null},"usage":{"output_tokens":5}}`) +
		anthropicEvent("message_stop", `{"type":"message_stop"}`)
}

// AnthropicText is a messages stream answering with the parts as
// consecutive text deltas, stop_reason "end_turn".
func AnthropicText(parts ...string) string {
	var b strings.Builder
	b.WriteString(anthropicEvent("message_start", anthropicStart))
	b.WriteString(anthropicEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`))
	for _, p := range parts {
		b.WriteString(anthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+jsonString(p)+`}}`))
	}
	b.WriteString(anthropicEvent("content_block_stop", `{"type":"content_block_stop","index":0}`))
	b.WriteString(anthropicEnd("end_turn"))
	return b.String()
}
