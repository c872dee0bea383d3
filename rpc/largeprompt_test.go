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
	const size = 4 << 20
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
	_, err = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"workspaceId":null}}`+"\n")
	must(t, err)
	must(t, w.until(`"id":1,`))
	line, err := w.r.ReadString('\n')
	must(t, err)
	_, rest, _ := strings.Cut(line, `"sessionId":"`)
	sid, _, _ := strings.Cut(rest, `"`)

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() { _, _ = io.Copy(inW, largePromptRequest(sid, size, false, false)) }()
	must(t, w.until("session/agent_settled"))
	must(t, w.until(`"method":"session/state"`))
	runtime.ReadMemStats(&after)
	copies := float64(after.TotalAlloc-before.TotalAlloc) / size
	t.Logf("%.1f copies", copies)
	if copies > 12 {
		t.Errorf("serving a prompt of %d bytes allocated %.1f times its size, want at most 12", size, copies)
	}
	if w.bytes < 2*size {
		t.Errorf("the client read %d bytes, want the text twice (session/message and session/state)", w.bytes)
	}
}
