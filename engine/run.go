package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/store"
)

// maxTurns bounds one run's model requests, so a model that never stops
// calling tools cannot run forever.
const maxTurns = 200

// runSpec is what a run starts from.
type runSpec struct {
	runID      string
	requestID  string
	user       *convo.Message // nil when resuming
	resumed    bool
	acceptedAt int64

	// input is the queued prompt that starts the run; start makes user
	// from it after the session lock is released (it encodes attached
	// files).
	input *QueueItem
	// approver answers the run's approval requests: the connection that
	// sent its input or asked for the resume; nil for the engine's.
	approver Approver
}

// Prompt submits input (docs/protocol.md `session/prompt`):
// validate, enter it into the queue, make it and its request id durable
// (queue.json, docs/protocol.md 8.6), then reserve the run state and
// publish run_accepted, start the run and return its id. A prompt during a
// run, or while earlier inputs wait to start, stays queued (see
// dispatchLocked).
func (s *Session) Prompt(in PromptInput) (PromptResult, error) {
	if err := validatePrompt(&in); err != nil {
		return PromptResult{}, err
	}
	// A prompt refused (or answered from the dedup cache) after its relock
	// took the lock leaves no work behind (letgo.go).
	defer s.letGoIfIdle()
	res, item, seq, err := s.acceptPrompt(&in)
	if err != nil {
		return res, err
	}
	// An accepted prompt makes a draft exist on disk (docs/storage.md,
	// "The journal of the run in progress"), before queue.json is
	// written: so the prompt's request id is durable before its answer,
	// and a retry after a crash answers the run the next open recovers.
	// A draft that cannot be written stays a draft; its run's journal
	// says why. A retry of the prompt waits here too (the store's write
	// queue), so it is not answered before the first attempt is durable.
	if !s.e.noJournal && s.st.IsDraft() {
		if err := s.st.PersistForRun(res.RunID); err != nil {
			s.e.log.Warn("draft not written at its first prompt", "session", s.id, "err", err)
		}
	}
	// The one write of a prompt, before its answer (a retry's too: it is
	// answered once the state that holds it is written). A draft's session
	// that could not be written has nothing on disk: this writes nothing
	// until its first save has made it so. A write that fails (a full disk) does not refuse the prompt: it
	// runs, as a prompt whose commit will fail does (its result is kept as
	// a pending save), the failure is logged, and the next write holds the
	// whole state (docs/protocol.md 8.6).
	s.saveQueueLogged(seq, "prompt")
	if item == nil {
		return res, nil
	}
	res, d := s.confirmPrompt(item, res)
	s.carryOut(d)
	return res, nil
}

// acceptPrompt checks a submission and enters it into the queue, unsaved:
// nothing starts it, or anything behind it, and no client sees it until
// confirmPrompt. It returns the seq of the state to write, and the item
// (nil for a retry of an accepted request id, whose first answer it
// returns).
func (s *Session) acceptPrompt(in *PromptInput) (PromptResult, *QueueItem, uint64, error) {
	digest := contentDigest(in.Text, in.Images, in.Files, in.Skills)
	skillErr := s.checkSkills(in.Skills) // reads the skill folders, so before the lock
	// The relock and the admission, with no let-go between (letgo.go).
	s.hold.Lock()
	defer s.hold.Unlock()
	s.relock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if first, found, err := checkDedup(&s.dedup, in.RequestID, digest); found {
		return first.result(in.RequestID), nil, s.qd.seq, err
	}
	if in.StreamID != nil && *in.StreamID != s.e.streamID {
		return PromptResult{}, nil, 0, errorf(CodeDeliveryUnknown, "streamId %q is not this server's stream; the prompt was not run", *in.StreamID)
	}
	if err := s.admitLocked(kindPrompt); err != nil {
		return PromptResult{}, nil, 0, err
	}
	m, _, err := s.resolveModelLocked()
	if err != nil {
		return PromptResult{}, nil, 0, err
	}
	if len(in.Images) > 0 && !m.Images {
		return PromptResult{}, nil, 0, errorf(CodeModelImagesUnsupported, "model %s/%s does not accept images", m.Provider, m.ID)
	}
	if skillErr != nil {
		return PromptResult{}, nil, 0, skillErr
	}
	// The queue keeps its own copies: the caller may reuse its slices.
	item := &QueueItem{
		ID: in.RequestID, RunID: newID(), Text: in.Text, Images: slices.Clone(in.Images), Files: slices.Clone(in.Files),
		Skills: slices.Clone(in.Skills), QueuedAt: s.e.now(), approver: in.Approver, unsaved: true,
	}
	if in.front {
		// An edit's prompt (Session.Edit): its command holds the
		// session, whose release starts it first.
		item.front = true
		s.promptGateLocked()
		s.queue = slices.Insert(s.queue, 0, item)
	} else if s.promptGateLocked() {
		// Sent after an abort (to the idle session, or while the stopped
		// work settles): it runs next, ahead of the inputs the abort
		// kept, and the queue drains again after it.
		s.queue = slices.Insert(s.queue, 0, item)
	} else {
		s.queue = append(s.queue, item)
	}
	// The entry written says what the dispatch will answer, as far as can
	// be told now; a dispatch that decides otherwise (another request
	// changed the queue meanwhile) writes the entry again (confirmPrompt).
	queued := !s.startsNextLocked(item) && !item.front
	s.dedup.add(in.RequestID, dedupEntry{digest: digest, runID: item.RunID, queued: queued, forkedID: in.forkedID})
	return PromptResult{RunID: item.RunID, RequestID: in.RequestID, Queued: queued}, item, s.queueChangedLocked(), nil
}

// startsNextLocked: dispatchLocked would start it now, were it saved.
func (s *Session) startsNextLocked(it *QueueItem) bool {
	if s.state.phase != phaseIdle || !s.queueMayStartLocked() {
		return false
	}
	i := slices.IndexFunc(s.queue, func(q *QueueItem) bool { return !q.Held })
	return i >= 0 && s.queue[i] == it
}

// confirmPrompt ends a prompt once its write is done: the input may
// start, and dispatchLocked decides whether it (or an input ahead of it)
// starts now.
func (s *Session) confirmPrompt(item *QueueItem, res PromptResult) (PromptResult, dispatched) {
	s.mu.Lock()
	defer s.mu.Unlock()
	item.unsaved = false
	d := s.dispatchLocked()
	// The answer acceptPrompt wrote stands when it said queued: an input
	// sent while the session settled waits for the drain, which this
	// dispatch takes over (it is queued, as it always was). One that was to
	// start and did not (a command took the session meanwhile) is queued
	// after all: its entry is written again.
	queued := res.Queued || d.started != item && !item.front
	// The queue a client sees changed unless the input started at once.
	d.queueChanged = queued || len(d.failed) > 0
	if queued != res.Queued {
		if e, ok := s.dedup.get(item.ID); ok && e.runID == item.RunID {
			e.queued = queued
			s.dedup.add(item.ID, e)
			d.seq = s.queueChangedLocked()
		}
	}
	res.Queued = queued
	return res, d
}

func (e *Engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

func (e *Engine) isReloading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reloading
}

// resolveModelLocked finds the session's model and its provider client.
func (s *Session) resolveModelLocked() (Model, provider.Provider, error) {
	h := s.st.Header()
	cat := s.e.catalog()
	if h.Model == nil {
		if len(cat.models) == 0 {
			return Model{}, nil, errorf(CodeNoProvider, "no model provider is configured")
		}
		return Model{}, nil, errorf(CodeModelNotFound, "the session has no model; choose one with session/set_model")
	}
	ref := *h.Model
	m, ok := cat.find(ref)
	if !ok {
		if len(cat.models) == 0 {
			return Model{}, nil, errorf(CodeNoProvider, "no model provider is configured (the session's model is %s/%s)", ref.Provider, ref.ID)
		}
		return Model{}, nil, errorf(CodeModelNotFound, "model %s/%s is not configured; choose another with session/set_model", ref.Provider, ref.ID)
	}
	p, ok := cat.providers[m.Provider]
	if !ok {
		return Model{}, nil, errorf(CodeNoProvider, "provider %q is not available", m.Provider)
	}
	return m, s.traced(m, p), nil
}

// beginRunLocked reserves the prompt operation and returns the function
// that publishes run_accepted and starts the run; call it after unlocking.
func (s *Session) beginRunLocked(spec runSpec) (start func()) {
	ctx, cancel := context.WithCancel(withRunScope(context.Background(), spec))
	r := &activeRun{id: spec.runID, requestID: spec.requestID, cancel: cancel, done: make(chan struct{})}
	s.startRunLocked(r)
	s.lastError = nil
	return func() {
		if in := spec.input; in != nil {
			user := userMessage(in.ID, in.Text, in.Images, in.Files, in.Skills, spec.acceptedAt)
			spec.user = &user
		}
		s.tracePrompt(spec)
		s.e.emit(Event{Kind: EventRunAccepted, SessionID: s.id, Payload: &RunAcceptedEvent{
			SessionID: s.id, RunID: spec.runID, RequestID: spec.requestID, Resumed: spec.resumed,
		}})
		go s.execute(ctx, r, spec)
	}
}

// execute is one run from acceptance to settlement: the agent loop, the
// prompt timing, the one commit, then the settled event and the queue.
func (s *Session) execute(ctx context.Context, r *activeRun, spec runSpec) {
	defer s.finishRun(r)
	defer r.cancel()
	defer s.settleRunPanic(r, spec)

	var context []convo.Block
	if spec.user != nil {
		context = s.currentContext()
	}
	s.mu.Lock()
	start := len(s.history)
	firstUser := countUsers(s.history) == 0
	timing := store.PromptTiming{ID: spec.runID, StartedAt: spec.acceptedAt}
	var user *convo.Message // the prompt as the history holds it, for the journal
	if spec.user != nil {
		timing.UserMessageIndex = countUsers(s.history)
		u := s.withContextLocked(*spec.user, context)
		s.appendLocked(u)
		user = &u
	} else {
		timing.UserMessageIndex = max(countUsers(s.history)-1, 0)
	}
	timing.MessageStartIndex = store.Some(start)
	r.files = &runFiles{start: start}
	s.mu.Unlock()
	s.beginJournal(r, spec, user, start, timing.UserMessageIndex)

	// A prompt's timing starts at acceptance, with its user message. A
	// resume adds no message, so its timing starts with its first model
	// request: a resume that ends before one (refused by the context
	// budget, stopped at once) changed nothing, and stores no timing and
	// writes nothing (docs/protocol.md 4.7).
	timed := false
	startTiming := func() {
		if !timed {
			timed = true
			s.e.emit(Event{Kind: EventPromptTiming, SessionID: s.id, Payload: &PromptTimingEvent{SessionID: s.id, Event: "start", Timing: timing}})
		}
	}
	if spec.user != nil {
		s.publishMessage(spec.runID, start, *spec.user, nil)
		if firstUser {
			s.publishListChange("first_message")
		}
		startTiming()
	}
	outcome, runErr := s.runAgentLoop(ctx, spec, startTiming)
	s.mu.Lock()
	journal := r.journal
	end := len(s.history)
	s.mu.Unlock()
	s.checkpointEnd(ctx, spec.runID, r.files, end)

	var messages []convo.Message
	var edit func(*store.Header)
	var timings []store.TimingAt
	var saveErr error
	if timed {
		// Timing ends with generation: saving is excluded.
		finished := s.e.now()
		s.mu.Lock()
		end := len(s.history)
		timing.FinishedAt = store.Some(finished)
		timing.MessageEndIndex = store.Some(end)
		timing.Stopped = outcome == OutcomeCancelled
		timing.Usage = r.usage
		// The commit reads the history and writes what the store lacks: a
		// capped view suffices (history messages never change once
		// appended; see historyView).
		messages = s.history[:end:end]
		newOutput := hasOutput(s.history[start:])
		// The commit writes only this timing, after those already held.
		timings = []store.TimingAt{{Index: len(s.timingsLocked()), Timing: timing}}
		s.mu.Unlock()
		s.e.emit(Event{Kind: EventPromptTiming, SessionID: s.id, Payload: &PromptTimingEvent{SessionID: s.id, Event: "finish", Timing: timing}})

		var fallback string
		if firstUser && spec.user != nil {
			fallback = fallbackTitle(titleSource(spec.user))
		}
		edit = func(h *store.Header) {
			h.UpdatedAt = finished
			if newOutput {
				h.Unread = true
			}
			if fallback != "" && (h.Title == "" || h.TitleSource == store.TitleAuto) {
				// Never untitled in a list, even if no title is
				// generated (engine/title.go). An auto title here is
				// older than the history's first prompt (a rewind to
				// before it, or an edit of it): it names what was dropped.
				h.Title, h.TitleSource = fallback, store.TitleAuto
			}
			// A run recovered earlier is no longer the latest.
			h.Recovered = nil
		}
		saveErr = s.guard("saving the run", func() error { return s.commit(messages, edit, timings...) })
	}
	// A draft's first run has made the session exist on disk: queue.json
	// catches up with what it could not hold before (nothing to write
	// otherwise: saveQueue returns at once).
	s.saveQueueLogged(s.queueSeq(), "run")

	s.mu.Lock()
	var err error
	switch {
	case saveErr != nil && runErr != nil:
		err = &Error{Code: CodeStorageError, Message: "the run failed and its result could not be saved: " + runErr.Error() + "; " + saveErr.Error(), Causes: []error{runErr, saveErr}}
	case saveErr != nil:
		err = saveErr
	default:
		err = runErr
	}
	if saveErr != nil {
		s.pending = &pendingSave{messages: messages, edit: edit, timings: timings, err: saveErr, journal: journal}
		outcome = OutcomeError
	}
	s.releaseRunLocked(r)
	s.lastError = errorInfo(err)
	steered := r.steered
	s.mu.Unlock()
	if saveErr == nil {
		// Committed (or nothing to commit: a resume that sent no
		// request): the journal has served (docs/storage.md, Retire).
		s.retireJournal(journal)
	}

	for _, it := range steered {
		s.e.emit(Event{Kind: EventAgentSettled, SessionID: s.id, Payload: &AgentSettledEvent{
			SessionID: s.id, RunID: it.RunID, RequestID: it.ID, Outcome: outcome, Error: errorInfo(err), SteeredInto: spec.runID,
		}})
	}
	s.e.emit(Event{Kind: EventAgentSettled, SessionID: s.id, Payload: &AgentSettledEvent{
		SessionID: s.id, RunID: spec.runID, RequestID: spec.requestID, Outcome: outcome, Error: errorInfo(err),
	}})
	s.publishState()
	s.publishListChange("activity")
	ended := func() { s.traceRunEnd(spec, outcome) }
	if firstUser && spec.user != nil && ctx.Err() == nil {
		// A stopped first run gets no background title: abort cancels
		// title work (session/generate_title can make one later). The
		// run's end is recorded after its title's call (docs/traces.md).
		s.startTitle(spec.user, ended)
	} else {
		ended()
	}
	s.drainAfter(&r.owed)
}

// finishRun ends the run's goroutine: Wait stops waiting for it.
func (s *Session) finishRun(r *activeRun) {
	s.mu.Lock()
	s.finishRunLocked(r)
	s.mu.Unlock()
	close(r.done)
}

// runAgentLoop is agentLoop with a panic turned into an error outcome.
// Tool calls the panic left unanswered get error results, so the history
// stays a valid conversation for the next request.
func (s *Session) runAgentLoop(ctx context.Context, spec runSpec, requesting func()) (outcome string, err error) {
	defer func() {
		if p := recover(); p != nil {
			outcome, err = OutcomeError, s.panicError("the run", p)
			s.mu.Lock()
			s.streaming, s.draft = nil, nil
			s.mu.Unlock()
			s.answerOpenCalls(spec.runID)
		}
	}()
	return s.agentLoop(ctx, spec, requesting)
}

// answerOpenCalls gives the latest assistant message's unanswered tool
// calls error results.
func (s *Session) answerOpenCalls(runID string) {
	s.mu.Lock()
	var open []convo.Block
	for i := len(s.history) - 1; i >= 0; i-- {
		if s.history[i].Role != convo.RoleAssistant {
			continue
		}
		for _, c := range toolCalls(s.history[i]) {
			answered := slices.ContainsFunc(s.history[i+1:], func(m convo.Message) bool {
				return m.Role == convo.RoleToolResult && m.ToolCallID == c.ID
			})
			if !answered {
				open = append(open, c)
			}
		}
		break
	}
	s.mu.Unlock()
	for _, c := range open {
		s.appendMessage(runID, convo.Message{
			Role: convo.RoleToolResult, ToolCallID: c.ID, ToolName: c.Name, IsError: true, Timestamp: s.e.now(),
			Content: []convo.Block{{Type: convo.BlockText, Text: "The tool call did not finish: Loop hit an internal error."}},
		})
	}
}

// settleRunPanic is execute's last resort, for a panic outside the agent
// loop and the save (which settle as ordinary errors): if the run still
// holds the session it lets go, keeping unsaved messages as a pending
// save, announces the error outcome and drains the queue.
func (s *Session) settleRunPanic(r *activeRun, spec runSpec) {
	p := recover()
	if p == nil {
		return
	}
	err := s.panicError("settling the run", p)
	s.mu.Lock()
	mine := s.state.run == r
	if mine {
		if s.pending == nil && len(s.history) > len(s.st.Messages()) {
			finished := s.e.now()
			s.pending = &pendingSave{messages: s.history[:len(s.history):len(s.history)], edit: func(h *store.Header) { h.UpdatedAt = finished }, err: err, journal: r.journal}
		}
		s.lastError = errorInfo(err)
	}
	// A run that had let go already still owes its drain, unless it ran.
	s.releaseRunLocked(r)
	s.mu.Unlock()
	if mine {
		s.e.emit(Event{Kind: EventAgentSettled, SessionID: s.id, Payload: &AgentSettledEvent{
			SessionID: s.id, RunID: spec.runID, RequestID: spec.requestID, Outcome: OutcomeError, Error: errorInfo(err),
		}})
		s.publishState()
		s.traceRunEnd(spec, OutcomeError)
	}
	s.drainAfter(&r.owed)
}

// timingsLocked returns the saved timings plus those of a pending save.
// The result is shared with the store unless a save is pending: callers
// must not modify it.
func (s *Session) timingsLocked() []store.PromptTiming {
	ts := s.st.Timings()
	if s.pending == nil || len(s.pending.timings) == 0 {
		return ts
	}
	out := slices.Clone(ts)
	for _, w := range s.pending.timings {
		if w.Index < len(out) {
			out[w.Index] = w.Timing
		} else {
			out = append(out, w.Timing)
		}
	}
	return out
}

// hasOutput: new completed output sets unread.
func hasOutput(msgs []convo.Message) bool {
	for i := range msgs {
		if msgs[i].Role == convo.RoleAssistant && len(msgs[i].Content) > 0 {
			return true
		}
	}
	return false
}

// resumableHistory: the history ends in work the model did not finish.
func resumableHistory(h []convo.Message) bool {
	if len(h) == 0 {
		return false
	}
	last := h[len(h)-1]
	switch last.Role {
	case convo.RoleUser, convo.RoleToolResult:
		return true
	case convo.RoleAssistant:
		return last.StopReason == convo.StopAborted || last.StopReason == convo.StopError || last.StopReason == convo.StopLength
	}
	return false
}

// commit writes one snapshot through the store's write queue.
func (s *Session) commit(messages []convo.Message, edit func(*store.Header), timings ...store.TimingAt) error {
	edit, done := s.withUsage(edit)
	err := s.st.Commit(messages, nil, edit, timings...)
	done(err)
	if err != nil {
		return storageError(err, "save history")
	}
	return nil
}

// agentLoop asks the model, runs the tools it calls, and repeats until
// the model answers without tools, fails, or the run is cancelled. It
// calls requesting before each model request it sends.
func (s *Session) agentLoop(ctx context.Context, spec runSpec, requesting func()) (string, error) {
	s.mu.Lock()
	model, prov, err := s.resolveModelLocked()
	s.mu.Unlock()
	if err != nil {
		return OutcomeError, err
	}
	for turn := 0; ; turn++ {
		if ctx.Err() != nil {
			return OutcomeCancelled, nil
		}
		// A limit the user set (AgentOptions.MaxTurns) replaces Loop's.
		if limit := s.maxTurns(); limit > 0 {
			if turn >= limit {
				return OutcomeError, errorf(CodeBudgetExceeded, "the request was not sent: the run has made %d model requests, its limit (maxTurns)", limit)
			}
		} else if turn >= maxTurns {
			return OutcomeError, errorf(CodeModelError, "the run stopped after %d model requests", maxTurns)
		}
		if turn > 0 {
			// A safe steering boundary: the tool calls finished and the
			// next model request has not been sent.
			s.deliverSteering(spec.runID)
		}
		req, cost, err := s.buildRequest(ctx, model)
		if err == nil {
			req, cost, err = s.fitRequest(ctx, model, prov, req, cost)
		}
		if err == nil {
			err = s.checkRequestBudget(&model, &req, &cost)
		}
		if err != nil {
			if ctx.Err() != nil {
				return OutcomeCancelled, nil
			}
			return OutcomeError, err
		}
		requesting()
		msg, at, ids, outcome, err := s.streamReply(ctx, spec.runID, model, prov, req)
		if outcome != "" {
			return outcome, err
		}
		calls := toolCalls(msg)
		if len(calls) == 0 {
			return OutcomeCompleted, nil
		}
		for i, call := range calls {
			if ctx.Err() != nil {
				s.cancelCalls(spec.runID, calls[i:])
				return OutcomeCancelled, nil
			}
			// A tool starts only once its start is durable, so that after
			// a crash Loop knows which calls ran (engine/journal.go); one
			// that could not be recorded did not run, and ends the run.
			var journalErr error
			started := func() error {
				journalErr = s.journalToolStart(at, i, call.ID)
				return journalErr
			}
			res := s.runTool(ctx, spec.runID, spec.approver, ids[i], call, started)
			s.appendMessage(spec.runID, res)
			if journalErr != nil {
				s.refuseCalls(spec.runID, calls[i+1:], journalErr)
				return OutcomeError, journalErr
			}
		}
		if ctx.Err() != nil {
			return OutcomeCancelled, nil
		}
	}
}

// streamReply streams one assistant message into history, at index at. A
// non-empty outcome ends the run. ids are the session-unique ids of the
// message's tool calls, in order.
func (s *Session) streamReply(ctx context.Context, runID string, model Model, prov provider.Provider, req provider.Request) (msg convo.Message, at int, ids []string, outcome string, err error) {
	s.mu.Lock()
	idx := len(s.history)
	s.streaming = &convo.Message{Role: convo.RoleAssistant, Content: []convo.Block{}, Provider: model.Provider, Model: model.ID, Timestamp: s.e.now()}
	s.draft = s.ids.Draft()
	s.streamText = nil
	s.mu.Unlock()
	msgID := messageID(runID, idx)
	s.e.emit(Event{Kind: EventMessage, SessionID: s.id, Payload: &MessageEvent{
		SessionID: s.id, RunID: runID, MessageID: msgID, Event: "start", Role: convo.RoleAssistant, Index: &idx,
	}})
	msg, err = s.stream(ctx, model, prov, req, func(d provider.Delta) {
		callID := s.applyDelta(d)
		block := d.Block
		ev := &MessageEvent{SessionID: s.id, RunID: runID, MessageID: msgID, Event: "delta", Block: &block, Type: string(d.Kind), Delta: d.Text}
		if d.Kind == provider.DeltaToolCall {
			ev.ToolCallID, ev.ToolName = callID, d.ToolName
		}
		s.e.emit(Event{Kind: EventMessage, SessionID: s.id, Payload: ev})
	})
	msg.Role = convo.RoleAssistant
	msg.Provider, msg.Model = model.Provider, model.ID
	msg.Timestamp = s.e.now()
	if err != nil {
		if ctx.Err() != nil {
			// Stop keeps the visible partial text, without unfinished
			// tool calls or thinking.
			kept := visiblePart(msg)
			s.finishStreaming(runID, msgID, kept, convo.StopAborted, "Request was aborted")
			return msg, 0, nil, OutcomeCancelled, nil
		}
		kept := visiblePart(msg)
		s.finishStreaming(runID, msgID, kept, convo.StopError, err.Error())
		return msg, 0, nil, OutcomeError, wrapError(CodeModelError, err, "model %s/%s", model.Provider, model.ID)
	}
	if msg.StopReason == "" {
		msg.StopReason = convo.StopEnd
	}
	s.mu.Lock()
	s.streaming, s.draft = nil, nil
	at, renamed := s.appendLocked(msg)
	usage := s.usage
	j, runUsage := s.journalLocked()
	s.mu.Unlock()
	s.journalMessage(j, at, &msg, runUsage)
	pub := published(msg, at, renamed)
	for _, c := range toolCalls(*pub) {
		ids = append(ids, c.ID)
	}
	s.e.emit(Event{Kind: EventMessage, SessionID: s.id, Payload: &MessageEvent{
		SessionID: s.id, RunID: runID, MessageID: msgID, Event: "end", Message: pub, Usage: &usage,
	}})
	return msg, at, ids, "", nil
}

// finishStreaming ends a reply that did not complete: a partial entry with
// visible text is kept in history, an empty one is dropped.
func (s *Session) finishStreaming(runID, msgID string, kept convo.Message, stop, why string) {
	keep := len(kept.Content) > 0 || stop == convo.StopError
	kept.StopReason, kept.ErrorMessage = stop, why
	s.mu.Lock()
	s.streaming, s.draft = nil, nil
	at, renamed := 0, []store.RenamedCall(nil)
	var j *store.Journal
	var runUsage convo.UsageSum
	if keep {
		if kept.Content == nil {
			kept.Content = []convo.Block{}
		}
		at, renamed = s.appendLocked(kept)
		j, runUsage = s.journalLocked()
	}
	usage := s.usage
	s.mu.Unlock()
	s.journalMessage(j, at, &kept, runUsage)
	ev := &MessageEvent{SessionID: s.id, RunID: runID, MessageID: msgID, Event: "end", Usage: &usage}
	if keep {
		ev.Message = published(kept, at, renamed)
	}
	s.e.emit(Event{Kind: EventMessage, SessionID: s.id, Payload: ev})
}

// visiblePart keeps only the text a user saw.
func visiblePart(m convo.Message) convo.Message {
	out := m
	out.Content = nil
	for _, b := range m.Content {
		if b.Type == convo.BlockText && b.Text != "" {
			out.Content = append(out.Content, b)
		}
	}
	return out
}

func messageID(runID string, idx int) string { return fmt.Sprintf("%s/%d", runID, idx) }

// applyDelta grows the streaming draft that snapshots show. For a tool
// call block that opens, it returns the call's session-unique id (the one
// it gets in the history; the provider's when the draft is gone).
func (s *Session) applyDelta(d provider.Delta) (callID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	callID = d.ToolCallID
	m := s.streaming
	if m == nil || d.Block < 0 || d.Block > 4096 {
		return callID
	}
	// Text grows in builders (appending to a string would copy the whole
	// reply on every delta); snapshots assemble the blocks.
	for len(m.Content) <= d.Block {
		m.Content = append(m.Content, convo.Block{})
		s.streamText = append(s.streamText, &strings.Builder{})
	}
	b := &m.Content[d.Block]
	switch d.Kind {
	case provider.DeltaText:
		b.Type = convo.BlockText
		s.streamText[d.Block].WriteString(d.Text)
	case provider.DeltaThinking:
		b.Type = convo.BlockThinking
		s.streamText[d.Block].WriteString(d.Text)
	case provider.DeltaToolCall:
		b.Type, b.ID, b.Name = convo.BlockToolCall, d.ToolCallID, d.ToolName
		callID = s.draft.Name(d.Block, d.ToolCallID)
	case provider.DeltaToolArgs:
		b.Type = convo.BlockToolCall
		s.streamText[d.Block].WriteString(d.Text)
	}
	return callID
}

// streamingLocked assembles the live assistant draft for a snapshot.
func (s *Session) streamingLocked() *convo.Message {
	if s.streaming == nil {
		return nil
	}
	cp := *s.streaming
	cp.Content = slices.Clone(cp.Content)
	for i := range cp.Content {
		if i >= len(s.streamText) {
			break
		}
		text := s.streamText[i].String()
		if cp.Content[i].Type == convo.BlockToolCall {
			if text != "" {
				cp.Content[i].Arguments = json.RawMessage(text)
			}
		} else {
			cp.Content[i].Text = text
		}
	}
	for i, id := range s.draft.IDs() {
		if id != "" && i < len(cp.Content) {
			cp.Content[i].ID = id
		}
	}
	return &cp
}

// appendLocked adds m to the history and derives its tool call ids; it
// returns m's index and the ids so far that differ from the provider's
// (store.ToolCallIDs.Renamed: safe to read after the lock is let go).
func (s *Session) appendLocked(m convo.Message) (int, []store.RenamedCall) {
	idx := len(s.history)
	s.history = append(s.history, m)
	s.ids.Add(&s.history[idx])
	return idx, s.ids.Renamed()
}

// published is history message idx as events carry it: a copy of its
// own, with session-unique tool call ids.
func published(m convo.Message, idx int, renamed []store.RenamedCall) *convo.Message {
	out := []convo.Message{cloneMessage(m)}
	store.PublishIDs(out, idx, renamed)
	return &out[0]
}

// appendMessage adds a finished message to history and publishes it.
func (s *Session) appendMessage(runID string, m convo.Message) {
	s.mu.Lock()
	idx, renamed := s.appendLocked(m)
	j, usage := s.journalLocked()
	s.mu.Unlock()
	s.journalMessage(j, idx, &m, usage)
	s.publishMessage(runID, idx, m, renamed)
}

func (s *Session) publishMessage(runID string, idx int, m convo.Message, renamed []store.RenamedCall) {
	id := messageID(runID, idx)
	s.e.emit(Event{Kind: EventMessage, SessionID: s.id, Payload: &MessageEvent{
		SessionID: s.id, RunID: runID, MessageID: id, Event: "start", Role: m.Role, Index: &idx,
	}})
	s.e.emit(Event{Kind: EventMessage, SessionID: s.id, Payload: &MessageEvent{
		SessionID: s.id, RunID: runID, MessageID: id, Event: "end", Message: published(m, idx, renamed),
	}})
}

func toolCalls(m convo.Message) []convo.Block {
	var calls []convo.Block
	for _, b := range m.Content {
		if b.Type == convo.BlockToolCall {
			calls = append(calls, b)
		}
	}
	return calls
}

// cancelCalls answers tool calls a stop left unrun, so the history stays
// a valid conversation for the next request.
func (s *Session) cancelCalls(runID string, calls []convo.Block) {
	for _, c := range calls {
		s.appendMessage(runID, convo.Message{
			Role: convo.RoleToolResult, ToolCallID: c.ID, ToolName: c.Name, IsError: true, Timestamp: s.e.now(),
			Content: []convo.Block{{Type: convo.BlockText, Text: "The user stopped the run before this tool call ran."}},
		})
	}
}

// RequestAbort cancels the active run, pending approvals and auxiliary
// work at once, and returns a wait for cleanup. Abort ignores the command
// lock; it keeps the queue and pauses its draining.
func (s *Session) RequestAbort() (wait func(context.Context) (*Snapshot, error)) {
	s.mu.Lock()
	r, c := s.state.run, s.state.cmd
	// A run that has just let go may still be publishing its end; the
	// wait covers that too (docs/protocol.md 2.6).
	tail := s.state.latest
	if s.state.busy() {
		// The queue keeps its inputs and stops draining.
		s.pauseLocked()
	}
	// The run's context ends before its approvals do: an approval that
	// ends with an error the engine counts as a rejection would otherwise
	// let the run go on to another model turn, and complete, before the
	// abort reached it. (A cancel func only closes channels and starts
	// AfterFuncs in goroutines, so it is safe under the lock.)
	if r != nil {
		r.cancel()
	}
	for _, a := range s.approvals {
		a.cancel()
	}
	var opCancel context.CancelFunc
	if c != nil {
		opCancel = c.cancel
	}
	s.mu.Unlock()
	if opCancel != nil {
		opCancel()
	}
	// Cancel now, in request order; drain in the wait, off the read loop.
	s.aux.cancelNow()
	return func(ctx context.Context) (*Snapshot, error) {
		// Wait for the work this abort stopped, not for runs started after it.
		if tail != nil {
			select {
			case <-tail.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		// The finished run may have started title work; drain it too.
		s.aux.wait()
		if c != nil {
			// A cancelled compaction or title command lets go shortly.
			select {
			case <-c.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if s.hasQueue() {
			s.publishQueue()
		}
		return s.Snapshot(), nil
	}
}

// Abort cancels and waits (see RequestAbort).
func (s *Session) Abort(ctx context.Context) (*Snapshot, error) { return s.RequestAbort()(ctx) }

// Wait blocks until the session has no active run and the last run has
// published everything it settles with (agent_settled, then the state and
// list events after it), so a host that unsubscribes after Wait misses none.
func (s *Session) Wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		r := s.state.latest
		s.mu.Unlock()
		if r == nil {
			return nil
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Flush retries saving the retained snapshot without asking the model or
// running tools again.
func (s *Session) Flush() (*Snapshot, error) {
	finish, err := s.BeginFlush()
	if err != nil {
		return nil, err
	}
	return finish()
}

// BeginFlush takes the command lock now (see BeginCompact); finish writes.
func (s *Session) BeginFlush() (finish func() (*Snapshot, error), err error) {
	c, err := s.beginCommand(OpFlush, kindCommand)
	if err != nil {
		return nil, err
	}
	return func() (*Snapshot, error) { return s.finishFlush(c) }, nil
}

func (s *Session) finishFlush(c *heldCommand) (_ *Snapshot, err error) {
	defer s.settleCommand(c.release, &err)
	s.mu.Lock()
	p := s.pending
	s.mu.Unlock()
	if p == nil {
		c.release()
		return s.Snapshot(), nil
	}
	if err := s.commit(p.messages, p.edit, p.timings...); err != nil {
		s.mu.Lock()
		if s.pending != nil {
			s.pending.err = err
		}
		s.mu.Unlock()
		c.release()
		return nil, err
	}
	s.mu.Lock()
	s.pending = nil
	s.lastError = nil
	rec := p.recovery
	s.mu.Unlock()
	s.retireJournal(p.journal)
	if rec != nil && rec.Path != "" {
		// Saved after all: the copy Shutdown wrote is stale.
		if err := os.Remove(rec.Path); err != nil {
			s.e.log.Warn("stale recovery file not removed", "session", s.id, "path", rec.Path, "err", err)
		}
		s.forgetRecovery(rec.Path)
	}
	if s.e.isClosed() {
		// After shutdown the store stayed open only for this save, and
		// nothing new starts: queued inputs stay where they are.
		_ = s.st.Close()
		s.closeGitStore()
		c.releaseQuietly()
	} else {
		c.release()
	}
	s.publishState()
	s.publishListChange("activity")
	return s.Snapshot(), nil
}

// PendingSave returns the snapshot a failed save retains, if any.
func (s *Session) PendingSave() ([]convo.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		return nil, nil
	}
	return cloneMessages(s.pending.messages), s.pending.err
}

// Resume continues stopped work from completed history, without repeating
// the current input. Its approvals go to the engine's Approver.
func (s *Session) Resume() (PromptResult, error) { return s.ResumeWith(nil) }

// ResumeWith is Resume whose approval requests go to a (the connection
// that asked for it); nil is the engine's Approver.
func (s *Session) ResumeWith(a Approver) (PromptResult, error) {
	runID := newID()
	start, err := s.beginResume(runID, a)
	if err != nil {
		s.letGoIfIdle() // the relock may have taken the lock for nothing
		return PromptResult{}, err
	}
	start()
	return PromptResult{RunID: runID}, nil
}

// beginResume admits the resume and reserves its run; start publishes
// run_accepted and starts it.
func (s *Session) beginResume(runID string, a Approver) (start func(), err error) {
	s.hold.Lock()
	defer s.hold.Unlock()
	s.relock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admitLocked(kindResume); err != nil {
		return nil, err
	}
	if _, _, err := s.resolveModelLocked(); err != nil {
		return nil, err
	}
	s.reopenLocked()
	return s.beginRunLocked(runSpec{runID: runID, resumed: true, approver: a, acceptedAt: s.e.now()}), nil
}
