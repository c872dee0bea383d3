package rpc_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc"
)

// A prompt's text is copied a few times on its way through the server
// (read, decoded, recorded in the trace, saved, sent back in
// session/message and session/state), not dozens: jsonrpc2 decoded and
// encoded the params again, and encoding/json built every encoding in a
// buffer grown a quarter at a time, 38 times the text in all for a 50 MB
// prompt. What the process allocates from the request to the run's
// session/state is counted (the client streams its request and reads the
// output in small pieces: its own allocations are small).
func TestALargePromptIsCopiedAFewTimesNotDozens(t *testing.T) {
	// The bounds are what each dialect needs: the frame read (its pieces
	// and the line; the text is unescaped in the line and is its bytes:
	// dispatch.Decode), and for the native dialect the session/message
	// and session/state that carry it back (a prompt of 4 MB is under the
	// size from which a notification is written in pieces). Before the
	// commit's line, the trace's records and ACP's text blocks were made
	// in pieces or shared, the native dialect allocated 10.1 times the
	// text and ACP 10; before the text was decoded in place, 3.8 and 3.7.
	for _, tc := range []struct {
		dialect string
		acp     bool
		limit   float64
	}{{"native", false, 3.3}, {"acp", true, 3.3}} {
		t.Run("dialect="+tc.dialect, func(t *testing.T) {
			copies, client := largePromptCopies(t, tc.acp)
			t.Logf("%.1f copies", copies)
			if copies > tc.limit {
				t.Errorf("serving a prompt allocated %.1f times its size, want at most %v", copies, tc.limit)
			}
			if !tc.acp && client < 2*largePromptTestSize {
				t.Errorf("the client read %d bytes, want the text twice (session/message and session/state)", client)
			}
		})
	}
}

const largePromptTestSize = 4 << 20

// largePromptCopies serves one prompt of largePromptTestSize bytes and
// returns what the process allocated meanwhile, in times the text, and
// the bytes the client read.
func largePromptCopies(t *testing.T, acp bool) (float64, int) {
	const size = largePromptTestSize
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
	w := &lineWatcher{r: bufio.NewReaderSize(outR, 64<<10)}
	initialize, create := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"workspaceId":null}}`
	if acp {
		initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`
		create = `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"` + t.TempDir() + `","mcpServers":[]}}`
	}
	_, err = io.WriteString(inW, initialize+"\n"+create+"\n")
	must(t, err)
	must(t, w.until(`"id":1,`))
	var line string
	for !strings.Contains(line, `"id":2,`) {
		line, err = w.readMessage()
		must(t, err)
	}
	_, rest, _ := strings.Cut(line, `"sessionId":"`)
	sid, _, _ := strings.Cut(rest, `"`)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w.bytes = 0
	go func() { _, _ = io.Copy(inW, largePromptRequest(sid, size, acp, false)) }()
	if acp {
		must(t, w.until(`"id":3,`))
	} else {
		must(t, w.until("session/agent_settled"))
		must(t, w.until(`"method":"session/state"`))
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / size, w.bytes
}
