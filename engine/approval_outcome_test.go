package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// approverFunc adapts a function to engine.Approver.
type approverFunc func(ctx context.Context, req engine.ApprovalRequest) (string, error)

func (f approverFunc) Ask(ctx context.Context, req engine.ApprovalRequest) (string, error) {
	return f(ctx, req)
}

const writeScript = `{"turns":[
 {"steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"x.txt","content":"x"}}}]},
 {"steps":[{"text":"done"}]}
]}`

func toolResultText(t *testing.T, msgs []convo.Message, callID string) string {
	t.Helper()
	for _, m := range msgs {
		if m.Role == convo.RoleToolResult && m.ToolCallID == callID {
			return m.Text()
		}
	}
	t.Fatalf("no result for %s", callID)
	return ""
}

// TestApprovalThatFailsWhileTheRunStopsIsRejected: an approver that gives
// up for a reason of its own (the client closed its input) while the run is
// also being stopped decides the outcome: rejected, with its reason, not
// "cancelled because the run stopped" (docs/protocol.md 6, --on-eof=abort).
func TestApprovalThatFailsWhileTheRunStopsIsRejected(t *testing.T) {
	h := newHarness(t, writeScript)
	s := h.newSession()
	if _, err := s.SetPermission("ask"); err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{})
	h.e.SetApprover(approverFunc(func(ctx context.Context, _ engine.ApprovalRequest) (string, error) {
		close(asked)
		<-ctx.Done()
		return "", errors.New("the client closed its input before answering")
	}))
	res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	<-asked
	snap, err := s.Abort(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCancelled {
		t.Fatalf("outcome %q", got.Outcome)
	}
	if snap.LastApproval == nil || snap.LastApproval.Decision != engine.DecisionRejected {
		t.Fatalf("lastApproval %+v, want rejected", snap.LastApproval)
	}
	if got, want := toolResultText(t, snap.State.Messages, "w1"), "The approval request failed: the client closed its input before answering"; got != want {
		t.Fatalf("tool result %q, want %q", got, want)
	}
}

// TestApprovalWithdrawnByTheRunStoppingIsCancelled: an approver that
// returns ctx's own error was withdrawn: the call is "cancelled".
func TestApprovalWithdrawnByTheRunStoppingIsCancelled(t *testing.T) {
	h := newHarness(t, writeScript)
	s := h.newSession()
	if _, err := s.SetPermission("ask"); err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{})
	h.e.SetApprover(approverFunc(func(ctx context.Context, _ engine.ApprovalRequest) (string, error) {
		close(asked)
		<-ctx.Done()
		return "", ctx.Err()
	}))
	if _, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "go"}); err != nil {
		t.Fatal(err)
	}
	<-asked
	snap, err := s.Abort(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.LastApproval == nil || snap.LastApproval.Decision != "cancelled" {
		t.Fatalf("lastApproval %+v, want cancelled", snap.LastApproval)
	}
	if got, want := toolResultText(t, snap.State.Messages, "w1"), "The approval request was cancelled because the run stopped."; got != want {
		t.Fatalf("tool result %q, want %q", got, want)
	}
}

// TestApprovalErrorAnswerReadsAsTheRejection: a client that answers with
// an error (*engine.RejectedError) rejects the call; the model reads the
// documented rejection, then the client's words.
func TestApprovalErrorAnswerReadsAsTheRejection(t *testing.T) {
	for _, tc := range []struct{ said, want string }{
		{"the user closed the dialog", "The user rejected this tool call. The client said: the user closed the dialog"},
		{"", "The user rejected this tool call."},
	} {
		h := newHarness(t, writeScript)
		s := h.newSession()
		if _, err := s.SetPermission("ask"); err != nil {
			t.Fatal(err)
		}
		h.e.SetApprover(approverFunc(func(context.Context, engine.ApprovalRequest) (string, error) {
			return "", &engine.RejectedError{Message: tc.said}
		}))
		res, err := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if got := h.settled(res.RunID); got.Outcome != engine.OutcomeCompleted {
			t.Fatalf("outcome %q", got.Outcome)
		}
		snap := s.Snapshot()
		if snap.LastApproval == nil || snap.LastApproval.Decision != engine.DecisionRejected {
			t.Fatalf("lastApproval %+v, want rejected", snap.LastApproval)
		}
		if got := toolResultText(t, snap.State.Messages, "w1"); got != tc.want {
			t.Fatalf("tool result %q, want %q", got, tc.want)
		}
	}
}
