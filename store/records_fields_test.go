package store

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/loopdev/loop/internal/convotest"
)

// Every field of a message, its blocks and its usage is written to
// messages.jsonl and read back: a field added to convo.Message,
// convo.Block or convo.Usage and forgotten by messageRecordOf, message()
// or recordjson.go fails here (and the format then needs its member in
// docs/storage.md and the golden files).
func TestDiskRecordCarriesEveryMessageField(t *testing.T) {
	m := convotest.Message()
	rec := messageRecordOf(&m)
	if miss := convotest.Missing(m, rec); len(miss) > 0 {
		t.Errorf("the disk record does not carry %q", miss)
	}
	line, err := rec.appendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var back messageRecord
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.message(); !reflect.DeepEqual(got, m) {
		t.Errorf("the line %s reads back as\n%+v\nwant\n%+v", line, got, m)
	}
}
