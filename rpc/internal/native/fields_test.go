package native

import (
	"encoding/json"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/convotest"
	"github.com/loopdev/loop/internal/jsonenc"
)

// A history message reaches the wire with every field of convo.Message,
// its blocks and its usage: a field added there and forgotten by
// MessageOf, or left without a member in Message, Block or Usage, fails
// here (and docs/protocol.md must then name its member:
// TestWireMembersAreDocumented).
func TestWireMessageCarriesEveryField(t *testing.T) {
	m := convotest.Message()
	b, err := jsonenc.Marshal(MessageOf(&m))
	if err != nil {
		t.Fatal(err)
	}
	var back Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if miss := convotest.Missing(m, back); len(miss) > 0 {
		t.Errorf("the wire's message does not carry %q", miss)
	}
	blocks := BlocksOf([]convo.Block{convotest.Block()})
	if b, err = jsonenc.Marshal(blocks); err != nil {
		t.Fatal(err)
	}
	var backBlocks []Block
	if err := json.Unmarshal(b, &backBlocks); err != nil {
		t.Fatal(err)
	}
	if miss := convotest.Missing([]convo.Block{convotest.Block()}, backBlocks); len(miss) > 0 {
		t.Errorf("the wire's block does not carry %q", miss)
	}
}
