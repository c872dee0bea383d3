package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/loopdev/loop/store"
)

// A trace write that fails is logged as one record a reader can use: its
// message says what happened, the directory and the error are attributes
// of their own, and no printf verb is left unformatted anywhere in it.
func TestAFailedTraceWriteIsLoggedAsAFormattedRecord(t *testing.T) {
	var logs syncBuffer
	e, root := engineWithBrokenTraces(t, slog.NewJSONHandler(&logs, nil))
	s, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	promptAndWait(t, s, "one")
	if err := e.Shutdown(context.Background(), Drain); err != nil {
		t.Fatal(err)
	}
	verb := regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)
	found := false
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		for k, v := range rec {
			if s := fmt.Sprint(v); verb.MatchString(s) {
				t.Errorf("log record %s: %s holds an unformatted verb: %q", line, k, s)
			}
		}
		msg, _ := rec["msg"].(string)
		errText, _ := rec["err"].(string)
		dir, _ := rec["dir"].(string)
		if strings.Contains(msg, "trace") && strings.Contains(errText, "not a directory") && strings.HasPrefix(dir, store.NewLayout(root).Traces()) {
			found = true
		}
	}
	if !found {
		t.Errorf("no record with the trace's directory and the error as attributes:\n%s", logs.String())
	}
}
