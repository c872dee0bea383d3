package provider

import (
	"encoding/json"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/convotest"
	"github.com/loopdev/loop/internal/jsonenc"
)

// The request log shows every field of every message the model was sent:
// a field added to convo.Message, convo.Block or convo.Usage without its
// member in scriptMessage, blockjson.Block or scriptUsage fails here.
func TestScriptLogCarriesEveryMessageField(t *testing.T) {
	m := convotest.Message()
	line, err := jsonenc.Marshal(scriptMessages([]convo.Message{m}))
	if err != nil {
		t.Fatal(err)
	}
	var back []scriptMessage
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatal(err)
	}
	if miss := convotest.Missing([]convo.Message{m}, back); len(miss) > 0 {
		t.Errorf("the request log does not carry %q", miss)
	}
}
