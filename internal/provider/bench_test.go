package provider

import (
	"bytes"
	"fmt"
	"testing"
)

const benchDeltas = 100_000

func openAIBenchStream() []byte {
	var b bytes.Buffer
	for i := range benchDeltas {
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1757001234,"model":"gpt-5","choices":[{"index":0,"delta":{"content":"tok%d "},"logprobs":null,"finish_reason":null}],"usage":null}`+"\n\n", i)
	}
	b.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1757001234,"model":"gpt-5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	return b.Bytes()
}

func anthropicBenchStream() []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range benchDeltas {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"tok%d \"}}\n\n", i)
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":100000}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}

// The whole parse of a 100,000-delta stream, text accumulation and delta
// callbacks included; the target is well under a second per op.
func BenchmarkOpenAIStream100k(b *testing.B) {
	data := openAIBenchStream()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		n := 0
		st := &openAIStream{b: newBuilder("bench", "gpt-5", func(Delta) { n++ })}
		if err := st.read(bytes.NewReader(data)); err != nil || n != benchDeltas {
			b.Fatalf("err %v deltas %d", err, n)
		}
	}
}

func BenchmarkAnthropicStream100k(b *testing.B) {
	data := anthropicBenchStream()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		n := 0
		st := &anthropicStream{b: newBuilder("bench", "claude", func(Delta) { n++ }), blocks: map[int]*anthropicBlockState{}}
		if err := st.read(bytes.NewReader(data)); err != nil || n != benchDeltas {
			b.Fatalf("err %v deltas %d", err, n)
		}
	}
}

func BenchmarkSSEReader100k(b *testing.B) {
	data := openAIBenchStream()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r := newSSEReader(bytes.NewReader(data))
		n := 0
		for {
			if _, err := r.next(); err != nil {
				break
			}
			n++
		}
		if n != benchDeltas+2 {
			b.Fatalf("%d events", n)
		}
	}
}
