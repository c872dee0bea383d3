package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/engine"
)

// screenLines is what a terminal shows after raw: each line as the
// carriage returns, line feeds and erase-to-end-of-line left it.
func screenLines(raw string) []string {
	var lines []string
	var cur []rune
	col := 0
	for i := 0; i < len(raw); {
		switch {
		case strings.HasPrefix(raw[i:], "\x1b[K"):
			cur = cur[:col]
			i += 3
			continue
		case raw[i] == '\r':
			col = 0
		case raw[i] == '\n':
			lines = append(lines, string(cur))
			cur, col = nil, 0
		default:
			r := []rune(raw[i:])[0]
			if col < len(cur) {
				cur[col] = r
			} else {
				cur = append(cur, r)
			}
			col++
			i += len(string(r))
			continue
		}
		i++
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

func TestRunTellsRetriesOnATerminalStderrAndClearsItsStatus(t *testing.T) {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k == 1 {
			http.Error(w, `{"error":{"message":"upstream hiccup"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"fine\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()
	data, proj := newDataRoot(t, `{"turns":[]}`)
	cfg := `{"providers":{"oa":{"api":"openai","baseUrl":"` + srv.URL + `","titles":false,"retry":{"attempts":2,"baseDelayMs":1},"models":[{"id":"gpt-t"}]}}}`
	if err := os.WriteFile(filepath.Join(data, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, pt, tty := loopAndPty(t)
	defer pt.Close()
	cmd := loopCommand(bin, data, proj, "run", "hello")
	cmd.Env = append(slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") }), "TERM=xterm")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	// No controlling terminal: nothing may be asked.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var screenMu sync.Mutex
	var screen strings.Builder
	recorded := make(chan struct{})
	go func() {
		record(pt, &screenMu, &screen)
		close(recorded)
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("loop run: %v", err)
	}
	// The terminal's last reader returns once every writer closed it.
	<-recorded
	screenMu.Lock()
	raw := screen.String()
	screenMu.Unlock()
	if stdout.String() != "fine\n" {
		t.Fatalf("stdout %q", stdout.String())
	}
	if !strings.Contains(raw, "waiting for oa/gpt-t…") {
		t.Fatalf("no waiting status on the terminal: %q", raw)
	}
	// On a terminal the retry is yellow and the statuses faint (--color
	// auto); what stays on the screen, the colours aside: the retry, and
	// no status left behind.
	if !strings.Contains(raw, yellow+"loop run: HTTP 500") || !strings.Contains(raw, faint+"waiting for oa/gpt-t…") {
		t.Fatalf("the retry and the status are not coloured: %q", raw)
	}
	got := screenLines(regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(raw, ""))
	want := []string{"loop run: HTTP 500, retrying in 1 ms, attempt 2 of 2"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the terminal shows %q, want %q (raw %q)", got, want, raw)
	}
}

func TestProgressSaysNothingNewWhenStderrIsNoTerminal(t *testing.T) {
	g := newProgress(&runKnobs{}, false, nil)
	if s := g.status("waiting for m…") + g.line("HTTP 500, retrying in 2 s, attempt 2 of 4") + g.clear(); s != "" {
		t.Fatalf("wrote %q on a stderr that is no terminal", s)
	}
	if !g.tools() {
		t.Fatal("tool lines are told without a terminal, as before")
	}
	q := newProgress(&runKnobs{quiet: true}, true, nil)
	if s := q.status("waiting for m…") + q.line("retry"); s != "" || q.tools() {
		t.Fatalf("--quiet wrote %q", s)
	}
	v := newProgress(&runKnobs{verbose: true}, false, nil)
	if s := v.status("waiting for m…") + v.status("waiting for m…"); s != "loop run: waiting for m…\n" {
		t.Fatalf("--verbose without a terminal: %q", s)
	}
}

func TestRetryTextSaysStatusWaitAndAttempt(t *testing.T) {
	for _, c := range []struct {
		ev   engine.RetryEvent
		want string
	}{
		{engine.RetryEvent{Attempt: 2, Of: 4, Delay: 2 * time.Second, Status: 500}, "HTTP 500, retrying in 2 s, attempt 2 of 4"},
		{engine.RetryEvent{Attempt: 3, Of: 4, Delay: 1500 * time.Millisecond, Message: "model network error: connection refused"}, "model network error: connection refused, retrying in 1.5 s, attempt 3 of 4"},
		{engine.RetryEvent{Attempt: 2, Of: 2, Delay: 250 * time.Millisecond, Status: 429}, "HTTP 429, retrying in 250 ms, attempt 2 of 2"},
	} {
		if got := retryText(&c.ev); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
