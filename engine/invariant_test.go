package engine_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// The invariant test drives random command sequences (prompts, resends,
// queue actions, abort, resume, set_model, set_title, compact, flush,
// config/reload, mark_read, pin) across several sessions and checks the
// session core after every step. The seed fixes
// the command sequence and the model script; how runs interleave with the
// commands is the scheduler's. Quick by default; longer with
// -invariant.steps=N (or LOOP_INVARIANT_STEPS=N), another sequence with
// -invariant.seed=N (or LOOP_INVARIANT_SEED=N); a failure names its seed.
var (
	invariantSteps = flag.Int("invariant.steps", 0, "steps of TestRandomCommandsKeepTheSessionInvariants (default 400, or $LOOP_INVARIANT_STEPS)")
	invariantSeed  = flag.Int64("invariant.seed", 0, "first seed of TestRandomCommandsKeepTheSessionInvariants (default 1, or $LOOP_INVARIANT_SEED)")
)

func invariantSetting(flagValue int64, env string, def int64) int64 {
	if flagValue != 0 {
		return flagValue
	}
	if v, err := strconv.ParseInt(os.Getenv(env), 10, 64); err == nil && v != 0 {
		return v
	}
	return def
}

func TestRandomCommandsKeepTheSessionInvariants(t *testing.T) {
	steps := int(invariantSetting(int64(*invariantSteps), "LOOP_INVARIANT_STEPS", 400))
	seed := invariantSetting(*invariantSeed, "LOOP_INVARIANT_SEED", 1)
	before := goroutineIDs()
	runInvariantSequence(t, seed, steps)
	noGoroutinesLeft(t, before)
}

// invariantScript is a model script long enough for steps: replies of
// every shape (text, thinking, tool calls the read-only preset allows, a
// bash call that needs an approval, a model error, a reply that hangs
// until aborted) and summaries, some slow, some hanging.
func invariantScript(rng *rand.Rand, steps int) string {
	var turns []string
	for i := range steps * 3 {
		var t string
		switch n := rng.Intn(100); {
		case n < 35:
			t = `{"steps":[{"text":"ok"}]}`
		case n < 50:
			t = fmt.Sprintf(`{"steps":[{"text":"slow"},{"sleepMs":%d},{"text":" reply"}]}`, 1+rng.Intn(4))
		case n < 70:
			t = fmt.Sprintf(`{"steps":[{"text":"looking"},{"toolCall":{"id":"c%d","name":"ls","arguments":{}}}]}`, i)
		case n < 78:
			t = fmt.Sprintf(`{"steps":[{"toolCall":{"id":"c%da","name":"ls","arguments":{}}},{"toolCall":{"id":"c%db","name":"ls","arguments":{"path":"."}}}]}`, i, i)
		case n < 84:
			t = fmt.Sprintf(`{"steps":[{"toolCall":{"id":"c%d","name":"bash","arguments":{"command":"true"}}}]}`, i)
		case n < 90:
			t = `{"steps":[{"thinking":"hm"},{"text":"thought"}]}`
		case n < 95:
			t = `{"steps":[{"text":"par"},{"error":"the model failed"}]}`
		default:
			t = `{"steps":[{"text":"partial"},{"hang":true}]}`
		}
		turns = append(turns, t)
	}
	for range steps {
		switch n := rng.Intn(10); {
		case n < 7:
			turns = append(turns, `{"purpose":"summary","steps":[{"text":"summary"}]}`)
		case n < 9:
			turns = append(turns, `{"purpose":"summary","steps":[{"sleepMs":2},{"text":"summary"}]}`)
		default:
			turns = append(turns, `{"purpose":"summary","steps":[{"hang":true}]}`)
		}
	}
	return `{"turns":[` + strings.Join(turns, ",") + `]}`
}

// sessionModel is what the test knows about one session.
type sessionModel struct {
	s        *engine.Session
	n        int
	accepted map[string]int    // request id → acceptance index
	texts    map[string]string // request id → submitted text
	runs     map[string]string // request id → run id
	reorder  map[string]bool   // ids whose place in the queue a rule or an action changed
	resumes  map[string]bool   // run ids of resumes
	ids      []string
}

// invariantApprover rejects bash calls at once, or (for one call in
// three) keeps the approval waiting until the run is aborted.
type invariantApprover struct{}

func (invariantApprover) Ask(ctx context.Context, req engine.ApprovalRequest) (string, error) {
	if id := req.ApprovalID; id != "" && id[len(id)-1]%3 == 0 {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return engine.DecisionRejected, nil
}

func runInvariantSequence(t *testing.T, seed int64, steps int) {
	t.Logf("seed %d, %d steps", seed, steps)
	rng := rand.New(rand.NewSource(seed))
	h := newHarness(t, invariantScript(rng, steps))
	h.e.SetApprover(invariantApprover{})
	ev := newEventLog(h.e)
	models := make([]*sessionModel, 3)
	for i := range models {
		models[i] = &sessionModel{
			s: h.newSession(), accepted: map[string]int{}, texts: map[string]string{},
			runs: map[string]string{}, reorder: map[string]bool{}, resumes: map[string]bool{},
		}
	}
	if _, err := models[0].s.SetPermission("ask"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var background sync.WaitGroup
	tally := map[string]int{}
	defer func() {
		out := map[string]int{}
		for _, m := range models {
			for k, v := range ev.outcomes(m.s.ID()) {
				out[k] += v
			}
		}
		t.Logf("seed %d: steps %v; run outcomes %v", seed, tally, out)
	}()
	fail := func(step int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d step %d: %s", seed, step, fmt.Sprintf(format, args...))
	}
	refused := ""
	allowed := func(err error, codes ...engine.Code) bool {
		if err != nil {
			refused = string(engine.CodeOf(err))
		}
		return err == nil || slices.Contains(codes, engine.CodeOf(err))
	}
	for step := range steps {
		i := rng.Intn(len(models))
		m := models[i]
		s := m.s
		what := ""
		refused = ""
		switch n := rng.Intn(100); {
		case n < 28:
			m.n++
			id := fmt.Sprintf("s%d-p%d", i, m.n)
			text := "prompt " + id
			what = "prompt " + id
			// A prompt sent to a paused queue goes to its front (docs/protocol.md 8.1).
			paused := engine.QueueGate(s) != "open"
			res, err := s.Prompt(engine.PromptInput{RequestID: id, Text: text})
			if err != nil {
				fail(step, "%s: %v", what, err)
			}
			m.accepted[id], m.texts[id], m.runs[id] = len(m.ids), text, res.RunID
			m.ids = append(m.ids, id)
			if paused {
				m.reorder[id] = true
			}
		case n < 33:
			if len(m.ids) == 0 {
				continue
			}
			id := m.ids[max(0, len(m.ids)-1-rng.Intn(min(len(m.ids), 100)))]
			what = "resend " + id
			res, err := s.Prompt(engine.PromptInput{RequestID: id, Text: m.texts[id]})
			if err != nil || res.RunID != m.runs[id] {
				fail(step, "%s: the same request id and content answered %+v %v, want run %s", what, res, err, m.runs[id])
			}
		case n < 58:
			q := s.Snapshot().State.Queue
			if len(q) == 0 {
				continue
			}
			it := q[rng.Intn(len(q))]
			acts := []string{engine.QueueEdit, engine.QueueMove, engine.QueueDelete, engine.QueueSteer, engine.QueueBeginEdit, engine.QueueCancelEdit}
			a := engine.QueueAction{ID: it.ID, Action: acts[rng.Intn(len(acts))]}
			switch a.Action {
			case engine.QueueEdit:
				text := it.Text + " (edited)"
				a.Text = &text
			case engine.QueueMove:
				if o := q[rng.Intn(len(q))]; rng.Intn(2) == 0 && o.ID != it.ID {
					a.BeforeID = &o.ID
				}
			}
			what = "queue " + a.Action + " " + it.ID
			_, err := s.Queue(a)
			if !allowed(err, engine.CodeQueueItemMissing, engine.CodeQueueConflict) {
				fail(step, "%s: %v", what, err)
			}
			if err == nil && a.Action != engine.QueueDelete && a.Action != engine.QueueEdit {
				m.reorder[it.ID] = true
			}

		case n < 66:
			what = "abort"
			cancelled := ev.outcomes(s.ID())[engine.OutcomeCancelled]
			snap, err := s.Abort(ctx)
			if err != nil {
				fail(step, "abort: %v", err)
			}
			// An abort that stopped work pauses the queue: the session is
			// idle after it. (One that found the session idle or settling
			// pauses nothing, and the queue goes on.) Only aborts cancel
			// runs, so a run that settled cancelled meanwhile was stopped
			// by this one.
			gate := engine.QueueGate(s)
			if ev.outcomes(s.ID())[engine.OutcomeCancelled] > cancelled && gate != "paused" {
				fail(step, "abort stopped a run and left the queue gate %s", gate)
			}
			if gate == "paused" {
				if snap.Operation != engine.OpIdle || snap.State.IsWaitingForApproval || snap.State.Streaming != nil {
					fail(step, "after abort: operation %q, approval %v, streaming %v", snap.Operation, snap.State.IsWaitingForApproval, snap.State.Streaming != nil)
				}
				if p := engine.SessionPhase(s); p == "running" || p == "command" {
					fail(step, "after abort the queue is paused but the phase is %s", p)
				}
			}
		case n < 72:
			what = "resume"
			res, err := s.Resume()
			if !allowed(err, engine.CodeNotResumable, engine.CodeBusy, engine.CodeApprovalPending) {
				fail(step, "resume: %v", err)
			}
			if err == nil {
				m.resumes[res.RunID] = true
			}
		case n < 76:
			what = "set_model"
			_, err := s.SetModel(engine.ModelRef{Provider: "fake", ID: []string{"m1", "m2"}[rng.Intn(2)]}, nil)
			if !allowed(err, engine.CodeBusy, engine.CodeApprovalPending) {
				fail(step, "set_model: %v", err)
			}
		case n < 80:
			what = "set_title"
			_, err := s.SetTitle(fmt.Sprintf("title %d", step))
			if !allowed(err, engine.CodeBusy, engine.CodeApprovalPending) {
				fail(step, "set_title: %v", err)
			}
		case n < 86:
			what = "compact"
			finish, err := s.BeginCompact()
			if !allowed(err, engine.CodeBusy, engine.CodeApprovalPending, engine.CodeNothingToCompact) {
				fail(step, "compact: %v", err)
			}
			if err == nil {
				// Like the server, the compaction itself runs off the read loop.
				background.Add(1)
				go func() {
					defer background.Done()
					if _, err := finish(ctx); err != nil && engine.CodeOf(err) != engine.CodeCancelled {
						t.Errorf("seed %d step %d: compaction: %v", seed, step, err)
					}
				}()
			}
		case n < 89:
			what = "flush"
			finish, err := s.BeginFlush()
			if !allowed(err, engine.CodeBusy, engine.CodeApprovalPending) {
				fail(step, "flush: %v", err)
			}
			if err == nil {
				if _, err := finish(); err != nil {
					fail(step, "flush: %v", err)
				}
			}
		case n < 91:
			// Refused while any session is busy; a reload starts the script anew.
			what = "reload"
			if err := h.e.ReloadConfig(ctx); !allowed(err, engine.CodeBusy) {
				fail(step, "config/reload: %v", err)
			}
		case n < 95:
			what = "mark_read"
			if _, err := s.MarkRead(s.Snapshot().State.MessageCount); err != nil {
				fail(step, "mark_read: %v", err)
			}
		default:
			what = "pin"
			if _, err := s.SetPinned(rng.Intn(2) == 0); err != nil {
				fail(step, "pin: %v", err)
			}
		}
		if what != "" {
			key := strings.Fields(what)[0]
			if strings.HasPrefix(what, "queue") {
				key = strings.Join(strings.Fields(what)[:2], " ")
			}
			if refused != "" {
				key += " (" + refused + ")"
			}
			tally[key]++
		}
		for j, m := range models {
			if err := checkSession(m, ev, false); err != nil {
				fail(step, "after %s on session %d, session %d: %v", what, i, j, err)
			}
		}
	}

	// Stop everything: empty the queues, abort what runs, until each
	// session is idle with nothing queued.
	for _, m := range models {
		for range 100 {
			for _, it := range m.s.Snapshot().State.Queue {
				_, _ = m.s.Queue(engine.QueueAction{ID: it.ID, Action: engine.QueueDelete})
			}
			snap, err := m.s.Abort(ctx)
			if err != nil {
				t.Fatalf("seed %d: final abort: %v", seed, err)
			}
			if snap.Operation == engine.OpIdle && len(snap.State.Queue) == 0 {
				break
			}
		}
	}
	background.Wait()
	for _, m := range models {
		if err := m.s.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for j, m := range models {
		if err := checkSession(m, ev, true); err != nil {
			t.Fatalf("seed %d: at the end, session %d: %v", seed, j, err)
		}
	}
	if err := h.e.Shutdown(ctx, engine.Drain); err != nil {
		t.Fatalf("seed %d: shutdown: %v", seed, err)
	}

	// What was committed is what the sessions showed.
	h.start()
	for j, m := range models {
		live := m.s.Snapshot().State.Messages
		if len(live) == 0 {
			continue
		}
		s, err := h.e.Session(m.s.ID())
		if err != nil {
			t.Fatalf("seed %d: reopen session %d: %v", seed, j, err)
		}
		saved := s.Snapshot().State.Messages
		if len(saved) != len(live) {
			t.Fatalf("seed %d: session %d saved %d messages, showed %d", seed, j, len(saved), len(live))
		}
		for k := range saved {
			if saved[k].Role != live[k].Role || saved[k].Text() != live[k].Text() || saved[k].ToolCallID != live[k].ToolCallID {
				t.Fatalf("seed %d: session %d message %d saved as %s %q, shown as %s %q", seed, j, k, saved[k].Role, saved[k].Text(), live[k].Role, live[k].Text())
			}
		}
	}
	if err := h.e.Shutdown(ctx, engine.Drain); err != nil {
		t.Fatal(err)
	}
}

// checkSession checks one session against the model; settled says that
// every run has ended.
func checkSession(m *sessionModel, ev *eventLog, settled bool) error {
	if err := engine.Invariants(m.s, true); err != nil {
		return err
	}
	snap := m.s.Snapshot()
	if err := validHistory(snap.State.Messages, settled || snap.Operation != engine.OpPrompt); err != nil {
		return err
	}
	// Nothing runs twice, each input runs as submitted, and prompts run in
	// the order they were accepted, but for those whose place a rule or
	// a queue action changed (a prompt sent to a paused queue goes first;
	// move, steer and holds change an item's place).
	steered := ev.steered(m.s.ID())
	last, lastID := -1, ""
	seen := map[string]bool{}
	for _, msg := range snap.State.Messages {
		if msg.Role != convo.RoleUser {
			continue
		}
		id := msg.RequestID
		if seen[id] {
			return fmt.Errorf("request %s ran twice", id)
		}
		seen[id] = true
		k, ok := m.accepted[id]
		if !ok {
			return fmt.Errorf("a user message with request id %q that was never accepted", id)
		}
		if want := m.texts[id]; !strings.HasPrefix(msg.Text(), want) {
			return fmt.Errorf("request %s ran as %q, sent as %q", id, msg.Text(), want)
		}
		if m.reorder[id] || steered[id] {
			continue
		}
		if k < last {
			return fmt.Errorf("request %s (accepted %d) ran after %s (accepted %d)", id, k, lastID, last)
		}
		last, lastID = k, id
	}
	for _, it := range snap.State.Queue {
		if seen[it.ID] {
			return fmt.Errorf("request %s is queued and ran", it.ID)
		}
		if it.RunID != m.runs[it.ID] {
			return fmt.Errorf("queued %s carries run %s, accepted as %s", it.ID, it.RunID, m.runs[it.ID])
		}
	}
	return ev.check(m.s.ID(), m.resumes, settled)
}

// validHistory checks that msgs is a conversation a model can continue:
// it starts with a user message, every tool result answers a call of the
// assistant message before it exactly once, no user or assistant message
// comes while calls are open, and two assistant messages follow each
// other only when a resume continued a stopped one. complete says that
// no run is in the middle of its tool calls.
func validHistory(msgs []convo.Message, complete bool) error {
	if len(msgs) > 0 && msgs[0].Role != convo.RoleUser {
		return fmt.Errorf("history starts with a %s message", msgs[0].Role)
	}
	open := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case convo.RoleUser:
			if len(open) > 0 {
				return fmt.Errorf("message %d: a user message while tool calls %v are unanswered", i, keys(open))
			}
		case convo.RoleAssistant:
			if len(open) > 0 {
				return fmt.Errorf("message %d: an assistant message while tool calls %v are unanswered", i, keys(open))
			}
			if p := msgs[i-1]; p.Role == convo.RoleAssistant && p.StopReason != convo.StopAborted && p.StopReason != convo.StopError && p.StopReason != convo.StopLength {
				return fmt.Errorf("message %d: an assistant message after a finished one (stop %q)", i, p.StopReason)
			}
			for _, b := range m.Content {
				if b.Type != convo.BlockToolCall {
					continue
				}
				if open[b.ID] {
					return fmt.Errorf("message %d: tool call id %s twice in one message", i, b.ID)
				}
				open[b.ID] = true
			}
		case convo.RoleToolResult:
			if !open[m.ToolCallID] {
				return fmt.Errorf("message %d: a result for tool call %q, which is not open", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			return fmt.Errorf("message %d: role %q", i, m.Role)
		}
	}
	if complete && len(open) > 0 {
		return fmt.Errorf("tool calls %v are never answered", keys(open))
	}
	return nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// eventLog keeps the run events of every session, in delivery order.
type eventLog struct {
	mu     sync.Mutex
	events []engine.Event
}

func newEventLog(e *engine.Engine) *eventLog {
	l := &eventLog{}
	e.Subscribe(func(ev engine.Event) {
		switch ev.Payload.(type) {
		case *engine.RunAcceptedEvent, *engine.AgentSettledEvent:
			l.mu.Lock()
			l.events = append(l.events, ev)
			l.mu.Unlock()
		}
	})
	return l
}

// outcomes counts the session's settled runs by outcome.
func (l *eventLog) outcomes(sessionID string) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, ev := range l.events {
		if p, ok := ev.Payload.(*engine.AgentSettledEvent); ok && p.SessionID == sessionID {
			out[p.Outcome]++
		}
	}
	return out
}

func (l *eventLog) steered(sessionID string) map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for _, ev := range l.events {
		if p, ok := ev.Payload.(*engine.RunAcceptedEvent); ok && p.SessionID == sessionID && p.SteeredInto != "" {
			out[p.RequestID] = true
		}
	}
	return out
}

// check: every run is accepted once and settles once, after it was
// accepted; a run from the queue is accepted only after the run before it
// settled (a resume may be accepted while the run it continues is still
// settling: it is admitted as soon as that run let go, like a command;
// steered inputs are accepted into the running turn); with settled, every
// accepted run has settled.
func (l *eventLog) check(sessionID string, resumes map[string]bool, settled bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	accepted, done := map[string]int{}, map[string]int{}
	open := map[string]bool{}
	for _, ev := range l.events {
		switch p := ev.Payload.(type) {
		case *engine.RunAcceptedEvent:
			if p.SessionID != sessionID {
				continue
			}
			if accepted[p.RunID]++; accepted[p.RunID] > 1 {
				return fmt.Errorf("run %s (request %s) accepted twice", p.RunID, p.RequestID)
			}
			if p.SteeredInto != "" {
				continue
			}
			if len(open) > 0 && !resumes[p.RunID] {
				return fmt.Errorf("run %s (request %s) accepted before run %v settled", p.RunID, p.RequestID, keys(open))
			}
			open[p.RunID] = true
		case *engine.AgentSettledEvent:
			if p.SessionID != sessionID {
				continue
			}
			if accepted[p.RunID] == 0 {
				return fmt.Errorf("run %s (request %s) settled before it was accepted", p.RunID, p.RequestID)
			}
			if done[p.RunID]++; done[p.RunID] > 1 {
				return fmt.Errorf("run %s (request %s) settled twice", p.RunID, p.RequestID)
			}
			delete(open, p.RunID)
		}
	}
	if settled {
		for id := range accepted {
			if done[id] == 0 {
				return fmt.Errorf("run %s was accepted and never settled", id)
			}
		}
	}
	return nil
}

var goroutineHeader = regexp.MustCompile(`(?m)^goroutine (\d+) `)

// goroutineIDs returns the ids of the live goroutines.
func goroutineIDs() map[string]bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	ids := map[string]bool{}
	for _, m := range goroutineHeader.FindAllSubmatch(buf, -1) {
		ids[string(m[1])] = true
	}
	return ids
}

// noGoroutinesLeft fails when goroutines started since before still run
// once they have had the time to return (they are given several seconds:
// this checks for leaks, not speed).
func noGoroutinesLeft(t *testing.T, before map[string]bool) {
	t.Helper()
	var left []string
	for range 500 {
		left = left[:0]
		for id := range goroutineIDs() {
			if !before[id] {
				left = append(left, id)
			}
		}
		if len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	t.Fatalf("%d goroutines started by the test are still running: %v\n%s", len(left), left, buf[:n])
}
