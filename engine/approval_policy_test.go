package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/loopdev/loop/engine"
)

// Each prompt makes one tool call, then ends its turn.
const policyScript = `{"turns":[
 {"match":"write a","steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"a"}}}]},
 {"match":"write a","steps":[{"text":"done"}]},
 {"match":"write b","steps":[{"toolCall":{"id":"w2","name":"write","arguments":{"path":"b.txt","content":"b"}}}]},
 {"match":"write b","steps":[{"text":"done"}]},
 {"match":"write c","steps":[{"toolCall":{"id":"w3","name":"write","arguments":{"path":"c.txt","content":"c"}}}]},
 {"match":"write c","steps":[{"text":"done"}]},
 {"match":"edit a","steps":[{"toolCall":{"id":"e1","name":"edit","arguments":{"path":"a.txt","oldText":"a","newText":"b"}}}]},
 {"match":"edit a","steps":[{"text":"done"}]}
]}`

// askLog is an approver that answers every request with the next of its
// answers (the last one repeating) and records which tools it was asked
// about.
type askLog struct {
	mu      sync.Mutex
	answers []string
	asked   []string // tool names, in order
}

func (l *askLog) Ask(_ context.Context, req engine.ApprovalRequest) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, req.Tool.Name)
	a := l.answers[0]
	if len(l.answers) > 1 {
		l.answers = l.answers[1:]
	}
	return a, nil
}

func (l *askLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.asked)
}

func askSession(t *testing.T, h *harness) *engine.Session {
	t.Helper()
	s := h.newSession()
	if _, err := s.SetPermission("ask"); err != nil {
		t.Fatal(err)
	}
	return s
}

// rejected-session rejects the call and every later call of that tool in
// the live session without a request (ACP's reject_always is this answer).
func TestRejectedForTheSessionIsNotAskedAgain(t *testing.T) {
	h := newHarness(t, policyScript)
	ap := &askLog{answers: []string{engine.DecisionRejectedSession}}
	h.e.SetApprover(ap)
	s := askSession(t, h)

	h.prompt(s, "r1", "write a")
	snap := s.Snapshot()
	if snap.LastApproval == nil || snap.LastApproval.Decision != engine.DecisionRejectedSession {
		t.Fatalf("lastApproval %+v, want rejected-session", snap.LastApproval)
	}
	h.prompt(s, "r2", "write b")
	if n := ap.count(); n != 1 {
		t.Fatalf("%d approval requests, want 1: the rejection stands for the session", n)
	}
	snap = s.Snapshot()
	for _, id := range []string{"w1", "w2"} {
		if got := toolResultText(t, snap.State.Messages, id); got != "The user rejected this tool call." {
			t.Fatalf("%s: tool result %q", id, got)
		}
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(snap.Cwd, f)); !os.IsNotExist(err) {
			t.Fatalf("%s was written (%v)", f, err)
		}
	}
	if snap.State.IsWaitingForApproval {
		t.Fatal("waiting for an approval after the runs settled")
	}
}

// The standing rejection is of one tool in one session: another tool, and
// the same tool in another session, still ask.
func TestRejectedForTheSessionIsPerToolAndPerSession(t *testing.T) {
	h := newHarness(t, policyScript)
	ap := &askLog{answers: []string{engine.DecisionRejectedSession, engine.DecisionAllowedOnce}}
	h.e.SetApprover(ap)
	s := askSession(t, h)
	h.prompt(s, "r1", "write a") // rejected for the session
	h.prompt(s, "r2", "edit a")  // asks: another tool
	if ap.count() != 2 || ap.asked[1] != "edit" {
		t.Fatalf("asked about %v, want [write edit]", ap.asked)
	}

	h2 := newHarness(t, policyScript)
	ap2 := &askLog{answers: []string{engine.DecisionRejectedSession, engine.DecisionAllowedOnce}}
	h2.e.SetApprover(ap2)
	a := askSession(t, h2)
	b := askSession(t, h2)
	h2.prompt(a, "r1", "write a")
	h2.prompt(b, "r2", "write b")
	if ap2.count() != 2 {
		t.Fatalf("%d requests: another session's rejection decided this one's call", ap2.count())
	}
	if _, err := os.Stat(filepath.Join(b.Snapshot().Cwd, "b.txt")); err != nil {
		t.Fatalf("the other session's allowed write: %v", err)
	}
}

// ResetApprovals forgets both standing answers: the next calls ask again.
func TestResetApprovalsAsksAgain(t *testing.T) {
	for _, standing := range []string{engine.DecisionAllowedSession, engine.DecisionRejectedSession} {
		t.Run(standing, func(t *testing.T) {
			h := newHarness(t, policyScript)
			ap := &askLog{answers: []string{standing}}
			h.e.SetApprover(ap)
			s := askSession(t, h)
			h.prompt(s, "r1", "write a")
			h.prompt(s, "r2", "write b")
			if ap.count() != 1 {
				t.Fatalf("%d requests before the reset, want 1", ap.count())
			}
			s.ResetApprovals()
			h.prompt(s, "r3", "write c")
			if ap.count() != 2 {
				t.Fatalf("%d requests after the reset, want 2", ap.count())
			}
		})
	}
}

// Approval requests offer rejected-session beside the documented answers
// (docs/protocol.md 6).
func TestApprovalRequestsOfferRejectedSession(t *testing.T) {
	h := newHarness(t, policyScript)
	var got []string
	h.e.SetApprover(approverFunc(func(_ context.Context, req engine.ApprovalRequest) (string, error) {
		got = req.Options
		return engine.DecisionRejected, nil
	}))
	s := askSession(t, h)
	h.prompt(s, "r1", "write a")
	want := []string{"allowed-once", "allowed-session", "rejected", "rejected-session"}
	if len(got) != len(want) {
		t.Fatalf("options %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("options %v, want %v", got, want)
		}
	}
}
