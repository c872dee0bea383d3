package trace

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/provider"
)

// recordTurn records one main call of run "run1" answered with one event.
func recordTurn(w *Writer, body string) {
	c := w.StartCall(Record{Purpose: PurposeMain, Provider: "oa", API: "openai", Model: "m", RunID: "run1", RequestID: "r1"})
	c.Request(1, "http://x/v1/chat/completions", http.Header{}, provider.BodyOf([]byte(body)))
	c.Response(1, 200)
	c.Body(1, []byte("data: {\"n\":1}\n\ndata: [DONE]\n\n"))
	c.End(1, nil)
	c.Finish(Record{StopReason: "stop"})
}

// copyDir copies a trace directory as it is on disk now: what a process
// killed at this moment leaves.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "killed")
	if err := os.MkdirAll(out, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func wantRefusedAsIncomplete(t *testing.T, what, dir string) {
	t.Helper()
	tr, err := Read(dir)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if _, err := NewReplayer(tr); err == nil || !strings.Contains(err.Error(), "the trace is incomplete: prompt r1 (run run1) has no end record") {
		t.Errorf("%s: replayer %v, want the trace refused as incomplete", what, err)
	}
}

// Records still waiting for the flush when the process is killed (kill -9
// within the flush delay) never reach the disk and leave no incomplete
// record: the step they belonged to has no end record, and the trace is
// refused as incomplete instead of replaying into a false divergence.
// The same trace, flushed, replays.
func TestATraceKilledWithinTheFlushDelayIsRefusedAsIncomplete(t *testing.T) {
	w := newTestWriter(t, Options{Dir: filepath.Join(t.TempDir(), "rec")})
	w.Add(&Record{Type: TypePrompt, RunID: "run1", RequestID: "r1", Input: &Input{Text: "hi"}})
	recordTurn(w, `{"turn":1}`)
	w.Flush()
	recordTurn(w, `{"turn":2}`)
	killed := copyDir(t, w.Dir()) // killed now: the second turn was still in memory
	w.Add(&Record{Type: TypeEnd, Step: TypePrompt, RunID: "run1", Outcome: "completed"})
	w.Close()

	wantRefusedAsIncomplete(t, "killed within the flush delay", killed)
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewReplayer(tr); err != nil {
		t.Fatalf("the whole trace is refused: %v", err)
	}
}

// cuttingFS is a disk that fills up: once full is set, a write stores the
// first half of what it was given (or nothing) and fails, as a write
// that runs out of space does.
type cuttingFS struct{ failingFS }

func (f *cuttingFS) OpenFile(name string, flag int, perm os.FileMode) (io.WriteCloser, error) {
	file, err := f.failingFS.osFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return cuttingFile{file, f}, nil
}

type cuttingFile struct {
	io.WriteCloser
	fs *cuttingFS
}

func (f cuttingFile) Write(p []byte) (int, error) {
	if !f.fs.broken.Load() {
		return f.WriteCloser.Write(p)
	}
	n, _ := f.WriteCloser.Write(p[:len(p)/2])
	return n, errInjected
}

// A disk that stays full until the process exits takes every record after
// it filled, the incomplete record the writer would have written once a
// write succeeded included: the step's missing end still tells. So does a
// last line the full disk cut short, while a line cut short after a step
// that ended is only the end of the trace, which replays.
func TestATraceWhoseDiskStayedFullUntilExitIsRefusedAsIncomplete(t *testing.T) {
	for _, cut := range []bool{false, true} {
		var fsys FS = &failingFS{}
		broken := &fsys.(*failingFS).broken
		if cut {
			c := &cuttingFS{}
			fsys, broken = c, &c.broken
		}
		w := newTestWriter(t, Options{Dir: filepath.Join(t.TempDir(), "rec"), FS: fsys})
		w.Add(&Record{Type: TypePrompt, RunID: "run1", RequestID: "r1", Input: &Input{Text: "hi"}})
		recordTurn(w, `{"turn":1}`)
		w.Flush()
		broken.Store(true)
		recordTurn(w, `{"turn":2}`)
		w.Add(&Record{Type: TypeEnd, Step: TypePrompt, RunID: "run1", Outcome: "completed"})
		w.Close()
		if !w.Incomplete() {
			t.Fatal("the writer lost nothing")
		}
		what := "a disk full until exit"
		if cut {
			what += ", the last line cut short"
		}
		wantRefusedAsIncomplete(t, what, w.Dir())
	}
}
