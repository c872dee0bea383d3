package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc"
)

// A prompt whose text is long (decoded where it lies in its frame:
// dispatch.Decode) reaches the history as the very text sent, escapes,
// multi-byte characters and surrogate pairs included, whether it came as
// an NDJSON line or an LSP frame; the session/message that echoes it
// carries it whole.
func TestALongPromptReachesTheHistoryAsSentOverEitherFraming(t *testing.T) {
	text := strings.Repeat("func main() { fmt.Println(\"a \\\"quoted\\\" wörd\") } // 中文 😀 <tag> & \t the quick brown fox jumps over the lazy dog end\n", (3<<20)/110)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"requestId": "big", "text": text}); err != nil {
		t.Fatal(err)
	}
	// A few characters as \u escapes too, a surrogate pair among them: the
	// text is still most of its frame, so it is decoded where it lies.
	escaped := strings.Replace(strings.TrimSpace(buf.String()), "😀", `\ud83d\ude00`, 50)
	escaped = strings.Replace(escaped, "中", `\u4e2d`, 50)
	for _, lsp := range []bool{false, true} {
		t.Run(fmt.Sprintf("lsp=%v", lsp), func(t *testing.T) {
			root := t.TempDir()
			must(t, os.WriteFile(filepath.Join(root, "script.json"), []byte(`{"turns":[{"steps":[{"text":"Read it."}]}]}`), 0o600))
			must(t, os.WriteFile(filepath.Join(root, "config.json"), []byte(`{"titles":{"enabled":false},"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1","contextWindow":100000000}]}}}`), 0o600))
			eng, err := engine.New(engine.Options{DataRoot: root})
			must(t, err)
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- rpc.NewServer(eng, rpc.Options{}).Serve(context.Background(), inR, outW); outW.Close() }()
			defer func() {
				inW.Close()
				go io.Copy(io.Discard, outR)
				must(t, <-done)
			}()
			frame := func(msg string) string {
				if lsp {
					return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(msg), msg)
				}
				return msg + "\n"
			}
			w := &lineWatcher{r: bufio.NewReaderSize(outR, 64<<10), lsp: lsp}
			go func() {
				_, _ = io.WriteString(inW, frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)+frame(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"workspaceId":null}}`))
			}()
			must(t, w.until(`"id":1,`))
			var line string
			for !strings.Contains(line, `"id":2,`) {
				line, err = w.readMessage()
				must(t, err)
			}
			_, rest, _ := strings.Cut(line, `"sessionId":"`)
			sid, _, _ := strings.Cut(rest, `"`)
			go func() {
				_, _ = io.WriteString(inW, frame(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"`+sid+`",`+escaped[1:]+`}`))
			}()
			echoed := false
			for {
				msg, err := w.readMessage()
				must(t, err)
				if strings.Contains(msg, `"id":3,`) && strings.Contains(msg, `"error"`) {
					t.Fatalf("the prompt was refused: %.300s", msg)
				}
				if strings.Contains(msg[:min(len(msg), 200)], `"session/message"`) && len(msg) > len(text) {
					echoed = echoed || holds(t, msg, text)
				}
				if strings.Contains(msg[:min(len(msg), 200)], "session/agent_settled") {
					break
				}
			}
			if !echoed {
				t.Fatal("no session/message carried the text as sent")
			}
			s, err := eng.Session(sid)
			must(t, err)
			found := false
			for _, m := range s.Snapshot().State.Messages {
				for _, b := range m.Content {
					found = found || b.Text == text
				}
			}
			if !found {
				t.Fatal("the history does not hold the text as sent")
			}
		})
	}
}

// holds reports whether the JSON message msg has text as one of its
// strings.
func holds(t *testing.T, msg, text string) bool {
	var v any
	if err := json.Unmarshal([]byte(msg), &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return v == text
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
