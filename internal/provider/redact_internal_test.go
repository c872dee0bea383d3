package provider

import "testing"

func TestRedactRemovesWholeKeysOnly(t *testing.T) {
	for _, tc := range []struct{ s, key, want string }{
		{"Incorrect API key provided: sk-abc123.", "sk-abc123", "Incorrect API key provided: [redacted]."},
		{`{"error":"bad key sk-abc123"} url=https://h/v1?key=sk-abc123&x=1`, "sk-abc123", `{"error":"bad key [redacted]"} url=https://h/v1?key=[redacted]&x=1`},
		{"sk-abc123", "sk-abc123", "[redacted]"},
		{"sk-abc123sk-abc123 xsk-abc123 sk-abc1234", "sk-abc123", "sk-abc123sk-abc123 xsk-abc123 sk-abc1234"},
		{"invalid request: model x not found", "x", "invalid request: model [redacted] not found"},
		{"the maximum context exceeded", "x", "the maximum context exceeded"},
		{"rate limited, retry later", "a", "rate limited, retry later"},
		{"key a, a.", "a", "key [redacted], [redacted]."},
		{"ééx", "x", "ééx"},
		{"no key here", "", "no key here"},
	} {
		if got := redact(tc.s, tc.key); got != tc.want {
			t.Errorf("redact(%q, %q) = %q, want %q", tc.s, tc.key, got, tc.want)
		}
	}
}
