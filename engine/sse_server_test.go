package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// sseServerEnv makes the test binary a fake OpenAI server instead
// (TestMain): a provider in a process of its own, over 127.0.0.1, so that
// the process measured does what Loop does with a real one (a read a
// token, from a socket) and nothing of the server's work.
const sseServerEnv = "LOOP_TEST_SSE_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(sseServerEnv) != "" {
		serveSSE()
		return
	}
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(runCrashChild())
	}
	os.Exit(m.Run())
}

// serveSSE answers every request with cannedStream, an event at a time,
// each flushed and paced as a model's tokens come, and prints its address.
func serveSSE() {
	pace, _ := time.ParseDuration(os.Getenv(sseServerEnv))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	events := cannedStream()
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for _, ev := range events {
			if pace > 0 {
				time.Sleep(pace)
			}
			_, _ = io.WriteString(w, ev)
			f.Flush()
		}
	}))
}

// startSSEServer runs serveSSE in a child process and returns its base URL.
func startSSEServer(tb testing.TB, pace time.Duration) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), sseServerEnv+"="+pace.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error:") {
		tb.Fatalf("fake server: %q %v", line, err)
	}
	return "http://" + strings.TrimSpace(line) + "/v1"
}
