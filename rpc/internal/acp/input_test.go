package acp_test

import (
	"strings"
	"testing"
)

// Prompt text that is not valid Unicode is invalid_params, an embedded
// resource (an attached file) invalid_text_files, instead of U+FFFD.
func TestACPInvalidUnicodeIsRefused(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"ok"}]}]}`)
	lc := h.connectLines()
	lc.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	sid := lc.newSession(h.work)
	for _, tc := range []struct{ prompt, code, msg string }{
		{`[{"type":"text","text":"a\ud800"}]`, "invalid_params", `prompt[0].text is not valid Unicode (an unpaired surrogate \\ud800)`},
		{"[{\"type\":\"text\",\"text\":\"\xff\"}]", "invalid_params", `prompt[0].text is not valid Unicode (invalid UTF-8)`},
		{"[{\"type\":\"text\",\"text\":\"see\"},{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///a.txt\",\"text\":\"\\udc00\"}}]", "invalid_text_files", `prompt[1].resource.text is not valid Unicode`},
		{"[{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///\xfe.txt\",\"text\":\"x\"}}]", "invalid_text_files", `prompt[0].resource.uri is not valid Unicode`},
	} {
		got := lc.call("session/prompt", `{"sessionId":"`+sid+`","prompt":`+tc.prompt+`}`)
		if !strings.Contains(got, `"code":"`+tc.code+`"`) || !strings.Contains(got, tc.msg) {
			t.Errorf("%s: want %s %q, got %s", tc.prompt, tc.code, tc.msg, got)
		}
	}
	if got := lc.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"\ud83d\ude00"}]}`); !strings.Contains(got, `"stopReason":"end_turn"`) {
		t.Fatalf("a surrogate pair is valid: %s", got)
	}
}

// Params over 1 MiB are refused for every method but session/prompt, as in
// the native dialect (rpc/internal/dispatch, docs/acp.md).
func TestACPParamsOverOneMiBAreRefusedButPrompts(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"ok"}]}]}`)
	lc := h.connectLines()
	lc.call("initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	sid := lc.newSession(h.work)
	big := strings.Repeat("x", 1100000)
	if got := lc.call("session/set_mode", `{"sessionId":"`+sid+`","modeId":"ask","pad":"`+big+`"}`); !strings.Contains(got, `"code":-32602`) ||
		!strings.Contains(got, `"code":"invalid_params"`) || !strings.Contains(got, "params of session/set_mode are larger than 1048576 bytes") {
		t.Fatalf("set_mode with 1.1 MB: %.300s", got)
	}
	// The prompt reaches the engine, which weighs it against the model's
	// context window (this test model's is too small for it).
	if got := lc.call("session/prompt", `{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"`+big+`"}]}`); strings.Contains(got, "invalid_params") ||
		!strings.Contains(got, `"code":"context_budget"`) {
		t.Fatalf("a 1.1 MB prompt must reach the engine: %.300s", got)
	}
}
