package trace

import (
	"net/http"
	"strings"
	"testing"

	"github.com/loopdev/loop/internal/provider"
)

// The bound on what waits for the disk is for a disk that falls behind: a
// single record larger than it (a first whole body of a history with
// images) after a record or two of its own second is no loss, and a trace
// that called it one would be refused by replay (NewReplayer).
func TestOneRecordLargerThanWhatMayWaitForTheDiskIsNotLost(t *testing.T) {
	w := newTestWriter(t, Options{MaxBytes: 1 << 30})
	c := w.StartCall(Record{Purpose: PurposeMain, Provider: "oa", API: "openai", Model: "m"})
	body := `{"messages":"` + strings.Repeat("i", maxPending+1<<20) + `"}`
	c.Request(1, "https://example.test/v1", http.Header{"Content-Type": {"application/json"}}, provider.BodyOf([]byte(body)))
	c.Response(1, 200)
	c.Finish(Record{StopReason: "stop"})
	w.Flush()
	if w.Incomplete() {
		t.Fatalf("the writer says records were lost: %d, %s", w.lost, w.lostWhy)
	}
	tr, err := Read(w.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if tr.Incomplete || tr.Lost != "" {
		t.Fatalf("the trace lost records: %q", tr.Lost)
	}
	var got []string
	for _, r := range tr.Records {
		got = append(got, r.Type)
		if r.Type == TypeRequest && len(r.Body) != len(body) {
			t.Fatalf("request body of %d bytes, sent %d", len(r.Body), len(body))
		}
	}
	if want := "trace call request response result"; strings.Join(got, " ") != want {
		t.Fatalf("records %v, want %s", got, want)
	}
}
