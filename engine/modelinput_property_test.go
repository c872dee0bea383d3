package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

// propertyScript has turns enough for every operation of the random
// sessions below, each kind picked by a word in the prompt; resumed
// requests (whose last user message is the resume prompt) take the
// unmatched turns at the end.
func propertyScript(n int) string {
	var turns []string
	for k := range n {
		turns = append(turns,
			fmt.Sprintf(`{"match":"PLAIN","steps":[{"text":"plain answer %d"}]}`, k),
			`{"match":"TOOL","steps":[{"toolCall":{"name":"read","arguments":{"path":"missing.txt"}}}]}`,
			fmt.Sprintf(`{"match":"TOOL","steps":[{"text":"after the tool %d"}]}`, k),
			`{"match":"ERR","steps":[{"text":"partial "},{"error":"boom"}]}`,
			`{"match":"HANG","steps":[{"text":"streaming "},{"hang":true}]}`,
			fmt.Sprintf(`{"purpose":"summary","steps":[{"text":"SUMMARY %d"}]}`, k),
		)
	}
	for k := range n {
		turns = append(turns, fmt.Sprintf(`{"steps":[{"text":"resumed %d"}]}`, k))
	}
	return `{"turns":[` + strings.Join(turns, ",") + `]}`
}

// TestCachedModelInputEqualsOneBuiltFromScratch runs random sessions
// (prompts with and without tools, failed runs, aborts, queued prompts,
// steering, compactions, skill edits, model changes, a failed save and its
// flush, reopening) and after each step compares the next request built
// from the session's cached model input and token sums with one built from
// nothing: a stale cache would send the model a wrong history, or let the
// budget rule decide on wrong counts. On the way, a client following the
// session with SnapshotSince (stateMessages "delta") must hold exactly the
// history and timings of a complete snapshot.
func TestCachedModelInputEqualsOneBuiltFromScratch(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { cachedInputProperty(t, seed) })
	}
}

func cachedInputProperty(t *testing.T, seed uint64) {
	const steps = 40
	rng := rand.New(rand.NewPCG(seed, 7))
	h := newHarness(t, propertyScript(steps))
	ws, _ := h.e.Workspaces()
	skillDir := filepath.Join(ws[0].Cwd, ".loop", "skills", "review")
	if err := os.MkdirAll(skillDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeSkill := func(body string) {
		md := "---\nname: review\ndescription: Review a change\n---\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(skillDir, "SKILL.md"), []byte(md), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	body := ""
	writeSkill = func(write func(string)) func(string) {
		return func(b string) { body = b; write(b) }
	}(writeSkill)
	writeSkill("BODY-0")
	ctx := context.Background()
	s := h.newSession()
	// m2's window leaves room for a few turns beyond the system prompt and
	// tools, so that prompts to it compact automatically (or fail with
	// context_budget).
	_, _, fixed, err := engine.BuildRequest(ctx, s, true)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"compaction":{"reserveTokens":100},"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"},{"id":"m2","contextWindow":%d}]}}}`, fixed+100+320)
	if err := os.WriteFile(filepath.Join(h.root, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.e.ReloadConfig(ctx); err != nil {
		t.Fatal(err)
	}
	var held engine.Held
	var messages []convo.Message
	var timings []store.PromptTiming
	follow := func(what string) {
		t.Helper()
		snap, next := s.SnapshotSince(held, true)
		st := snap.State
		if st.MessagesFrom > len(messages) || st.PromptTimingsFrom > len(timings) {
			t.Fatalf("after %s: a delta from %d/%d past what the client holds (%d/%d)", what, st.MessagesFrom, st.PromptTimingsFrom, len(messages), len(timings))
		}
		messages = append(messages[:st.MessagesFrom:st.MessagesFrom], st.Messages...)
		timings = append(timings[:st.PromptTimingsFrom:st.PromptTimingsFrom], st.PromptTimings...)
		held = next
		full := s.Snapshot().State
		if !equalLists(messages, full.Messages) || !equalLists(timings, full.PromptTimings) {
			t.Fatalf("after %s: the delta client holds %d messages and %d timings, the session %d and %d", what, len(messages), len(timings), len(full.Messages), len(full.PromptTimings))
		}
	}
	var log []string
	settle := func() {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := s.Wait(wctx); err != nil {
			t.Fatalf("ops %s: the session never settled: %v (%s, queue %+v)", strings.Join(log, ","), err, engine.SessionPhase(s), dumpRun(s))
		}
	}
	n := 0
	lastKind := ""
	prompt := func(kind string, skills []string) engine.PromptResult {
		n++
		lastKind = kind
		res, err := s.Prompt(engine.PromptInput{RequestID: fmt.Sprint("r", n), Text: fmt.Sprintf("%s question %d", kind, n), Skills: skills})
		if err != nil && engine.CodeOf(err) != engine.CodePendingSave {
			t.Fatalf("prompt %s: %v", kind, err)
		}
		return res
	}
	for step := range steps {
		op := rng.IntN(11)
		switch op {
		case 0, 1:
			prompt("PLAIN", nil)
		case 2:
			prompt("TOOL", nil)
		case 3:
			prompt("ERR", nil)
		case 4:
			prompt("HANG", nil)
			if rng.IntN(2) == 0 {
				prompt("PLAIN", nil) // queued behind the hanging run
				if q := s.Snapshot().State.Queue; len(q) > 0 && rng.IntN(2) == 0 {
					_, _ = s.Queue(engine.QueueAction{ID: q[0].ID, Action: engine.QueueSteer})
				}
			}
			if _, err := s.Abort(ctx); err != nil {
				t.Fatalf("abort: %v", err)
			}
			lastKind = "HANG" // what a resume would go on with
		case 5:
			if s.Snapshot().State.CanResume {
				if _, err := s.Resume(); err != nil {
					t.Fatalf("resume: %v", err)
				}
				if lastKind == "HANG" {
					// The resumed request still answers to the hanging prompt.
					if _, err := s.Abort(ctx); err != nil {
						t.Fatalf("abort: %v", err)
					}
				}
			}
		case 6:
			_, _ = s.Compact(ctx) // nothing_to_compact on a short history
		case 7:
			writeSkill(fmt.Sprint("BODY-", step))
			prompt("PLAIN", []string{"review"})
		case 8:
			id := []string{"m1", "m2"}[rng.IntN(2)]
			if _, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: id}, nil); err != nil && engine.CodeOf(err) != engine.CodePendingSave {
				t.Fatalf("set_model: %v", err)
			}
		case 9:
			if s.Snapshot().Draft {
				continue // the broken save is of a session's later commits
			}
			repair := h.breakSaves(s)
			prompt("PLAIN", nil)
			settle()
			follow("a failed save")
			repair()
			if _, err := s.Flush(); err != nil {
				t.Fatalf("flush: %v", err)
			}
		case 10:
			if s.Snapshot().Draft {
				continue // a draft has nothing to reopen
			}
			settle()
			follow("before reopening")
			s = h.reopen(s.ID())
		}
		log = append(log, fmt.Sprint(op))
		settle()
		what := "ops " + strings.Join(log, ",")
		follow(what)
		req, bound, exact, err := engine.BuildRequest(ctx, s, true)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		fresh, freshBound, freshExact, err := engine.BuildRequestFresh(ctx, s)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !equalLists(req.Messages, fresh.Messages) {
			t.Fatalf("%s: the cached model input differs from one built from scratch:\ncached %s\nfresh  %s", what, texts(req.Messages), texts(fresh.Messages))
		}
		if bound != freshBound || exact != freshExact || req.System != fresh.System {
			t.Fatalf("%s: cached bound %d and count %d, from scratch %d and %d", what, bound, exact, freshBound, freshExact)
		}
		for _, m := range req.Messages {
			if m.Role == convo.RoleUser && len(m.Skills) > 0 && !strings.Contains(m.Text(), body) {
				t.Fatalf("%s: a request expands a skill without its current body %q: %q", what, body, m.Text())
			}
		}
		if bound < exact {
			t.Fatalf("%s: the bound %d is below the count %d", what, bound, exact)
		}
	}
}

func texts(msgs []convo.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "[%s %q] ", m.Role, m.Text())
	}
	return b.String()
}

// equalLists: the same elements, an empty list and nil alike.
func equalLists[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

func dumpRun(s *engine.Session) string {
	snap := s.Snapshot()
	return fmt.Sprintf("run %s request %s, queue %+v", snap.RunID, snap.RequestID, snap.State.Queue)
}
