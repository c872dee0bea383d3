package tools

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// endless serves head, then one line of x bytes that does not end: it calls
// call once it has served at bytes, and ends with io.EOF at limit, so a
// reader that ignores cancellation fails instead of hanging.
type endless struct {
	head   string
	served int64
	limit  int64
	at     int64
	call   func()
}

func (e *endless) Read(p []byte) (int, error) {
	if e.served >= e.limit {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && e.served < e.limit {
		if e.served < int64(len(e.head)) {
			p[n] = e.head[e.served]
		} else {
			p[n] = 'x'
		}
		n++
		e.served++
	}
	if e.call != nil && e.served >= e.at {
		e.call()
		e.call = nil
	}
	return n, nil
}

// A read cancelled in the middle of a line too long to end stops there.
func TestReadCancelInsideLine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &endless{head: "first\n", limit: 1 << 30, at: 1 << 20, call: cancel}
	res := readText(ctx, r, "big", 2, 10, map[string]any{}) // line 2 must be scanned to its end
	wantErr(t, res, "context canceled")
	if r.served >= r.limit {
		t.Fatalf("read scanned all %d bytes after the cancel", r.served)
	}
}

func TestGrepCancelInsideLine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &endless{head: "hello\n", limit: 1 << 30, at: 1 << 20, call: cancel}
	g := &grepRun{re: regexp.MustCompile("nomatch"), limit: 10}
	if err := g.searchLines(ctx, r, "big"); !errors.Is(err, context.Canceled) {
		t.Fatalf("searchLines: %v", err)
	}
	if r.served >= r.limit {
		t.Fatalf("grep scanned all %d bytes after the cancel", r.served)
	}
}

// Reading the head of a huge file scans a bounded amount past what it
// returns, and says more follows instead of counting every line.
func TestReadStopsCounting(t *testing.T) {
	r := &endless{head: strings.Repeat("hello\n", 3000), limit: 1 << 30}
	details := map[string]any{}
	got := wantOK(t, readText(context.Background(), r, "big", 1, 10, details))
	if !strings.Contains(got, "Showing lines 1-10, and more lines follow") || !strings.Contains(got, "offset=11") {
		t.Fatalf("note: %q", got[len(got)-200:])
	}
	if _, ok := details["totalLines"]; ok || details["truncated"] != true {
		t.Fatalf("details: %v", details)
	}
	if r.served > 2*readScanAhead {
		t.Fatalf("read of 10 lines scanned %d bytes", r.served)
	}

	// The same through the tool, on a sparse file where the OS allows one.
	ws := t.TempDir()
	p := filepath.Join(ws, "big.log")
	mustWrite(t, p, strings.Repeat("hello\n", 2000))
	if err := os.Truncate(p, 8<<30); err != nil {
		t.Skip(err)
	}
	got = wantOK(t, run(t, Env{Cwd: ws}, NameRead, map[string]any{"path": "big.log", "limit": 1}))
	if !strings.Contains(got, "and more lines follow") {
		t.Fatalf("sparse: %q", got)
	}
}

// A shown line whose end is more than readScanAhead away is cut, and read
// stops after it; the next call can go on past it.
func TestReadHugeLine(t *testing.T) {
	ws := t.TempDir()
	mustWrite(t, filepath.Join(ws, "f"), "head\n"+strings.Repeat("x", readScanAhead+1<<20)+"\ntail\n")
	got := wantOK(t, run(t, Env{Cwd: ws}, NameRead, map[string]any{"path": "f"}))
	if !strings.Contains(got, "1\thead\n2\txxx") || !strings.Contains(got, "[line cut: more than 4 MiB]") ||
		!strings.Contains(got, "offset=3") || strings.Contains(got, "tail") || len(got) > 8<<10 {
		t.Fatalf("huge line: %.300q ... %q", got, got[max(0, len(got)-300):])
	}
	got = wantOK(t, run(t, Env{Cwd: ws}, NameRead, map[string]any{"path": "f", "offset": 3}))
	if got != "3\ttail\n" {
		t.Fatalf("after the huge line: %q", got)
	}
}
