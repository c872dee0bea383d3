package providertest

import (
	"fmt"
	"strings"
)

// Builders of Responses API streams (docs/configuration.md, api
// "openai-responses"), as the API sends them: each event's type is both
// the SSE event name and the data's "type".

// ResponsesEvent is one event of a Responses API stream: its type as the
// SSE event name and data, the JSON object with "type" and
// "sequence_number" added to members.
func ResponsesEvent(seq int, typ, members string) string {
	data := `{"type":` + jsonString(typ) + `,"sequence_number":` + fmt.Sprint(seq)
	if members != "" {
		data += "," + members
	}
	return "event: " + typ + "\ndata: " + data + "}\n\n"
}

const responsesCreated = `"response":{"id":"resp_test","object":"response","created_at":1700000000,"status":"in_progress","model":"test-model","output":[],"usage":null}`

// ResponsesCompleted is the response.completed event at seq with the
// given output items (a JSON array) and usage.
func ResponsesCompleted(seq int, output string, input, cached, outputTokens int) string {
	return ResponsesEvent(seq, "response.completed", fmt.Sprintf(`"response":{"id":"resp_test","object":"response","created_at":1700000000,"status":"completed","model":"test-model","output":%s,`+
		`"usage":{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}}`,
		output, input, cached, outputTokens, input+outputTokens))
}

// ResponsesText is a Responses API stream answering with the parts as
// consecutive output_text deltas of one message item.
func ResponsesText(parts ...string) string {
	var b strings.Builder
	seq := 0
	ev := func(typ, members string) { b.WriteString(ResponsesEvent(seq, typ, members)); seq++ }
	ev("response.created", responsesCreated)
	ev("response.in_progress", responsesCreated)
	ev("response.output_item.added", `"output_index":0,"item":{"id":"msg_test","type":"message","status":"in_progress","content":[],"role":"assistant"}`)
	ev("response.content_part.added", `"item_id":"msg_test","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}`)
	for _, p := range parts {
		ev("response.output_text.delta", `"item_id":"msg_test","output_index":0,"content_index":0,"delta":`+jsonString(p))
	}
	text := jsonString(strings.Join(parts, ""))
	ev("response.output_text.done", `"item_id":"msg_test","output_index":0,"content_index":0,"text":`+text)
	ev("response.content_part.done", `"item_id":"msg_test","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":`+text+`}`)
	item := `{"id":"msg_test","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":` + text + `}],"role":"assistant"}`
	ev("response.output_item.done", `"output_index":0,"item":`+item)
	b.WriteString(ResponsesCompleted(seq, "["+item+"]", 12, 0, 5))
	return b.String()
}

// ResponsesToolCall is a Responses API stream calling one tool; args (a
// JSON object) streams in two fragments.
func ResponsesToolCall(callID, name, args string) string {
	var b strings.Builder
	seq := 0
	ev := func(typ, members string) { b.WriteString(ResponsesEvent(seq, typ, members)); seq++ }
	ev("response.created", responsesCreated)
	ev("response.output_item.added", `"output_index":0,"item":{"id":"fc_test","type":"function_call","status":"in_progress","arguments":"","call_id":`+jsonString(callID)+`,"name":`+jsonString(name)+`}`)
	half := len(args) / 2
	for _, frag := range []string{args[:half], args[half:]} {
		ev("response.function_call_arguments.delta", `"item_id":"fc_test","output_index":0,"delta":`+jsonString(frag))
	}
	ev("response.function_call_arguments.done", `"item_id":"fc_test","output_index":0,"arguments":`+jsonString(args))
	item := `{"id":"fc_test","type":"function_call","status":"completed","arguments":` + jsonString(args) + `,"call_id":` + jsonString(callID) + `,"name":` + jsonString(name) + `}`
	ev("response.output_item.done", `"output_index":0,"item":`+item)
	b.WriteString(ResponsesCompleted(seq, "["+item+"]", 12, 0, 5))
	return b.String()
}

// ResponsesReasoningToolCall is a Responses API stream with a reasoning
// item (its summary streamed, its encrypted content in
// response.output_item.done) followed by one tool call.
func ResponsesReasoningToolCall(reasoningID, summary, encrypted, callID, name, args string) string {
	var b strings.Builder
	seq := 0
	ev := func(typ, members string) { b.WriteString(ResponsesEvent(seq, typ, members)); seq++ }
	id := jsonString(reasoningID)
	ev("response.created", responsesCreated)
	ev("response.output_item.added", `"output_index":0,"item":{"id":`+id+`,"type":"reasoning","summary":[]}`)
	ev("response.reasoning_summary_part.added", `"item_id":`+id+`,"output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}`)
	ev("response.reasoning_summary_text.delta", `"item_id":`+id+`,"output_index":0,"summary_index":0,"delta":`+jsonString(summary))
	ev("response.reasoning_summary_text.done", `"item_id":`+id+`,"output_index":0,"summary_index":0,"text":`+jsonString(summary))
	ev("response.reasoning_summary_part.done", `"item_id":`+id+`,"output_index":0,"summary_index":0,"part":{"type":"summary_text","text":`+jsonString(summary)+`}`)
	reasoning := `{"id":` + id + `,"type":"reasoning","encrypted_content":` + jsonString(encrypted) + `,"summary":[{"type":"summary_text","text":` + jsonString(summary) + `}]}`
	ev("response.output_item.done", `"output_index":0,"item":`+reasoning)
	ev("response.output_item.added", `"output_index":1,"item":{"id":"fc_test","type":"function_call","status":"in_progress","arguments":"","call_id":`+jsonString(callID)+`,"name":`+jsonString(name)+`}`)
	ev("response.function_call_arguments.delta", `"item_id":"fc_test","output_index":1,"delta":`+jsonString(args))
	ev("response.function_call_arguments.done", `"item_id":"fc_test","output_index":1,"arguments":`+jsonString(args))
	call := `{"id":"fc_test","type":"function_call","status":"completed","arguments":` + jsonString(args) + `,"call_id":` + jsonString(callID) + `,"name":` + jsonString(name) + `}`
	ev("response.output_item.done", `"output_index":1,"item":`+call)
	b.WriteString(ResponsesCompleted(seq, "["+reasoning+","+call+"]", 40, 32, 9))
	return b.String()
}
