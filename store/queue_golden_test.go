package store

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// goldenQueueFile is the golden session's queue.json: two queued inputs
// and three accepted request ids (testQueue), written by SaveQueue.
var goldenQueueFile = filepath.Join("sessions", goldenWorkspace, goldenSession, queueFile)

func TestGoldenQueueFileIsWrittenByteForByte(t *testing.T) {
	r, s, _ := writeGolden(t)
	q := testQueue()
	if err := s.SaveQueue(&q); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(r.Dir(), goldenQueueFile))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(goldenDir, goldenQueueFile)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./store -run Golden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\ngot\n%s\nwant\n%s", goldenQueueFile, path, got, want)
	}
}

// The committed queue.json opens as written, beside the golden session; a
// golden session without one (as every session before it) has none.
func TestGoldenQueueFileOpensAsWritten(t *testing.T) {
	dst := copyGoldenFrom(t, goldenDir, append([]string{goldenQueueFile}, goldenFiles...))
	r, err := OpenRoot(dst)
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Open(goldenWorkspace, goldenSession)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ReadOnly() {
		t.Fatalf("read-only: %v", s.ReadOnlyReason())
	}
	if got := s.StoredQueue(); !reflect.DeepEqual(got, testQueue()) {
		t.Errorf("queue:\n got %+v\nwant %+v", got, testQueue())
	}
	e, err := r.Open("", goldenEmpty)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.StoredQueue(); !reflect.DeepEqual(got, QueueState{}) || e.ReadOnly() {
		t.Errorf("a session without queue.json: %+v, read-only %v", got, e.ReadOnly())
	}
}
