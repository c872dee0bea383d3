package engine

import (
	"testing"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// admitLocked answers the first refusal of a kind's list that holds, with
// that refusal's code (docs/session-state.md, Admission): with every
// refusal of the list holding, clearing them one by one in order walks
// through the list. (read-only needs a store another process writes; the
// store's tests and testdata/script/readonly_root.txtar cover it.)
func TestAdmissionAnswersTheFirstRefusalThatHolds(t *testing.T) {
	codes := map[refusal]Code{
		refusedClosed: CodeSessionNotFound, refusedPendingSave: CodePendingSave, refusedReloading: CodeBusy,
		refusedShuttingDown: CodeBusy, refusedApproval: CodeApprovalPending, refusedBusy: CodeBusy,
		refusedNotResumable: CodeNotResumable,
	}
	for k := range admission {
		e, err := New(Options{DataRoot: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		s := newSession(e, store.InMemory(t.TempDir()))
		set := func(r refusal, on bool) bool {
			switch r {
			case refusedClosed:
				s.state.closed = on
			case refusedPendingSave:
				s.pending = nil
				if on {
					s.pending = &pendingSave{edit: func(*store.Header) {}}
				}
			case refusedReloading:
				e.reloading = on
			case refusedShuttingDown:
				e.closed = on
			case refusedApproval:
				clear(s.approvals)
				if on {
					s.approvals["a"] = &pendingApproval{id: "a"}
				}
			case refusedBusy:
				s.state.phase, s.state.cmd = phaseIdle, nil
				if on {
					s.state.phase, s.state.cmd = phaseCommand, &heldCommand{op: OpCompact}
				}
			case refusedNotResumable:
				s.history = []convo.Message{{Role: convo.RoleUser}}
				if on {
					s.history = nil
				}
			default:
				return false
			}
			return true
		}
		var list []refusal
		for _, r := range admission[k] {
			if set(r, true) {
				list = append(list, r)
			}
		}
		for i, r := range list {
			err := s.admitLocked(kind(k))
			if CodeOf(err) != codes[r] || s.refusalLocked(kind(k)) != r {
				t.Errorf("%v with %v holding: got %v (%v), want %v (%s)", kind(k), list[i:], s.refusalLocked(kind(k)), err, r, codes[r])
			}
			set(r, false)
		}
		if err := s.admitLocked(kind(k)); err != nil {
			t.Errorf("%v with no refusal holding: %v", kind(k), err)
		}
	}
}

// The busy refusal names what holds the session, and a prompt is never
// refused for it: it queues.
func TestPromptsAreNotRefusedForABusySession(t *testing.T) {
	e, err := New(Options{DataRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(e, store.InMemory(t.TempDir()))
	s.state.phase, s.state.cmd = phaseCommand, &heldCommand{op: OpCompact}
	if err := s.admitLocked(kindPrompt); err != nil {
		t.Errorf("prompt during a compaction: %v", err)
	}
	if err := s.admitLocked(kindCommand); err == nil || err.Error() != "session is busy (compact)" {
		t.Errorf("command during a compaction: %v", err)
	}
}
