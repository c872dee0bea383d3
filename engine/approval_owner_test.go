package engine_test

import (
	"context"
	"testing"

	"github.com/loopdev/loop/engine"
)

// gateApprover signals each request on asked and answers it with what
// the test sends on answer.
type gateApprover struct {
	asked  chan string // the tool asked about
	answer chan string
}

func (g *gateApprover) Ask(ctx context.Context, req engine.ApprovalRequest) (string, error) {
	g.asked <- req.Tool.Name
	select {
	case a := <-g.answer:
		return a, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// A prompt that waits in the queue keeps the approver of the front end
// that sent it: when it runs, its approvals go there, not to the approver
// of the run before it nor to the engine's.
func TestAQueuedPromptIsApprovedByTheFrontEndThatSentIt(t *testing.T) {
	h := newHarness(t, policyScript)
	def := &askLog{answers: []string{engine.DecisionRejected}}
	h.e.SetApprover(def)
	s := askSession(t, h)
	a := &gateApprover{asked: make(chan string, 1), answer: make(chan string)}
	b := &askLog{answers: []string{engine.DecisionAllowedOnce}}

	first, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "write a", Approver: a})
	if err != nil {
		t.Fatal(err)
	}
	if tool := <-a.asked; tool != "write" {
		t.Fatalf("the first run asked about %s", tool)
	}
	// While the first run waits for its approval, another front end sends
	// a prompt: it queues.
	second, err := s.Prompt(engine.PromptInput{RequestID: "r2", Text: "write b", Approver: b})
	if err != nil {
		t.Fatal(err)
	}
	if !second.Queued {
		t.Fatal("the second prompt did not queue behind the first run")
	}
	a.answer <- engine.DecisionAllowedOnce
	if st := h.settled(first.RunID); st.Outcome != engine.OutcomeCompleted {
		t.Fatalf("the first run settled %s", st.Outcome)
	}
	if st := h.settled(second.RunID); st.Outcome != engine.OutcomeCompleted {
		t.Fatalf("the second run settled %s", st.Outcome)
	}
	if n := b.count(); n != 1 {
		t.Fatalf("the second prompt's front end was asked %d times, want 1", n)
	}
	if n := def.count(); n != 0 {
		t.Fatalf("the engine's approver was asked %d times, want 0", n)
	}
	if got := toolResultText(t, s.Snapshot().State.Messages, "w2"); got == "The user rejected this tool call." {
		t.Fatalf("the second prompt's call was rejected: %q", got)
	}
}
