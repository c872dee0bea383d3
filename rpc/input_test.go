package rpc_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// sendRaw writes one request whose params are raw JSON text, bytes that
// are not UTF-8 included, and returns its reply line.
func (c *pipeClient) sendRaw(method, params string) string {
	c.t.Helper()
	return c.readUntil(fmt.Sprintf(`"id":%d,`, c.writeRaw(method, params)))
}

// writeRaw writes one request whose params are raw JSON text and returns
// its id.
func (c *pipeClient) writeRaw(method, params string) int {
	c.t.Helper()
	c.id++
	if _, err := io.WriteString(c.in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.id, method, params)); err != nil {
		c.t.Fatal(err)
	}
	return c.id
}

// Strings that are not valid Unicode are refused with the code of the
// field, never decoded into U+FFFD and accepted.
func TestInvalidUnicodeInPromptsIsRefused(t *testing.T) {
	c := startServer(t, `{"turns":[{"steps":[{"hang":true}]}]}`)
	sid := c.newSession()
	// EOF drains, so the hanging run must stop before the server's cleanup.
	t.Cleanup(func() { c.sendRaw("session/abort", fmt.Sprintf(`{"sessionId":%q}`, sid)) })
	for _, tc := range []struct{ params, code, msg string }{
		{`"text":"hi","files":[{"name":"a.txt","text":"x\ud800"}]`, "invalid_text_files", `files[0].text is not valid Unicode (an unpaired surrogate \\ud800)`},
		{"\"text\":\"hi\",\"files\":[{\"name\":\"a.txt\",\"text\":\"\xff\"}]", "invalid_text_files", `files[0].text is not valid Unicode (invalid UTF-8)`},
		{"\"text\":\"hi\",\"files\":[{\"name\":\"\xc0.txt\",\"text\":\"\"}]", "invalid_text_files", `files[0].name is not valid Unicode (invalid UTF-8)`},
		{`"text":"\udbff!"`, "invalid_params", `text is not valid Unicode (an unpaired surrogate \\udbff)`},
		{"\"text\":\"\xed\xb0\x80\"", "invalid_params", `text is not valid Unicode (invalid UTF-8)`},
		{`"text":"hi","images":[{"data":"\ud800","mimeType":"image/png"}]`, "invalid_images", `images[0].data is not valid Unicode`},
	} {
		line := c.sendRaw("session/prompt", fmt.Sprintf(`{"sessionId":%q,"requestId":"r",%s}`, sid, tc.params))
		if !strings.Contains(line, `"code":"`+tc.code+`"`) || !strings.Contains(line, tc.msg) {
			t.Errorf("%s: want %s %q, got %s", tc.params, tc.code, tc.msg, line)
		}
	}
	if line := c.sendRaw("session/prompt", fmt.Sprintf(`{"sessionId":%q,"requestId":"ok","text":"\ud83d\ude00"}`, sid)); !strings.Contains(line, `"queued":false`) {
		t.Fatalf("a surrogate pair is valid: %s", line)
	}
	if line := c.sendRaw("session/prompt", fmt.Sprintf(`{"sessionId":%q,"requestId":"q","text":"queued"}`, sid)); !strings.Contains(line, `"queued":true`) {
		t.Fatalf("second prompt: %s", line)
	}
	for _, tc := range []struct{ params, code string }{
		{`"text":"\ud800"`, "invalid_params"},
		{"\"files\":[{\"name\":\"a.txt\",\"text\":\"a\xfe\"}]", "invalid_text_files"},
		{`"files":[{"name":"a.txt"}]`, "invalid_text_files"},
		{`"files":[{"name":"a.txt","text":null}]`, "invalid_text_files"},
	} {
		line := c.sendRaw("session/queue", fmt.Sprintf(`{"sessionId":%q,"id":"q","action":"edit",%s}`, sid, tc.params))
		if !strings.Contains(line, `"code":"`+tc.code+`"`) {
			t.Errorf("queue edit %s: want %s, got %s", tc.params, tc.code, line)
		}
	}
}

// A file's text is required on the wire: missing or null is not "".
func TestFileWithoutTextIsInvalidTextFiles(t *testing.T) {
	c := startServer(t, `{"turns":[{"steps":[{"text":"ok"}]}]}`)
	sid := c.newSession()
	for _, files := range []string{`[{"name":"a.txt"}]`, `[{"name":"a.txt","text":null}]`, `[{"name":"a.txt","text":"x"},null]`} {
		line := c.sendRaw("session/prompt", fmt.Sprintf(`{"sessionId":%q,"requestId":"r","text":"hi","files":%s}`, sid, files))
		if !strings.Contains(line, `"code":"invalid_text_files"`) || !strings.Contains(line, "text is required") {
			t.Errorf("files %s: %s", files, line)
		}
	}
	id := c.writeRaw("session/prompt", fmt.Sprintf(`{"sessionId":%q,"requestId":"r","files":[{"name":"empty.txt","text":""}]}`, sid))
	if line := c.promptSettled(id); !strings.Contains(line, `"runId"`) {
		t.Fatalf("an empty file is valid: %s", line)
	}
}
