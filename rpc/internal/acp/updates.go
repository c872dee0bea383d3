package acp

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

// onEvent translates one engine event into session/update notifications
// (and, for a settled run, the prompt's answer). It runs on the engine's
// goroutines, one event at a time: sending only queues in the outbox, so
// it never blocks on the client.
func (a *Agent) onEvent(ev engine.Event) {
	a.evMu.Lock()
	defer a.evMu.Unlock()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	var updates []any
	var after func()
	var drop bool
	v := a.views[ev.SessionID]
	switch e := ev.Payload.(type) {
	case *engine.RunAcceptedEvent:
		if p := a.prompts[e.RequestID]; p != nil && p.sessionID == e.SessionID {
			p.started = true
			p.runID = e.RunID
		}
	case *engine.MessageEvent:
		if e.Event == "end" && e.Message != nil && e.Message.Role == convo.RoleAssistant {
			for _, p := range a.prompts {
				if p.runID == e.RunID && p.sessionID == e.SessionID {
					p.stop = e.Message.StopReason
				}
			}
		}
		if v != nil {
			updates = a.messageUpdates(v, e)
		}
	case *engine.PromptTimingEvent:
		if e.Event == "finish" {
			for _, p := range a.prompts {
				if p.runID == e.Timing.ID && p.sessionID == e.SessionID {
					p.usage = e.Timing.Usage
				}
			}
		}
	case *engine.ToolEvent:
		if v != nil {
			updates = toolUpdates(v, e)
		}
	case *engine.AgentSettledEvent:
		after = a.settleLocked(e)
		if v != nil {
			// The run's calls are all closed: forget them.
			v.tools = map[string]*toolView{}
			v.running = ""
		}
	case *engine.StateEvent:
		if v != nil {
			// The title, the mode and the config options are all it reads:
			// no copy of the history.
			snap, _ := e.SnapshotSince(engine.Held{}, false)
			updates = a.stateUpdates(v, snap)
		}
	case *engine.SessionsChangedEvent:
		if v != nil {
			if e.Deleted {
				drop = true
			} else if e.Summary != nil && e.Summary.Title != v.title {
				v.title = e.Summary.Title
				updates = append(updates, titleUpdate(v.title))
			}
		}
	}
	var orphans []*pendingPrompt
	if drop {
		delete(a.views, ev.SessionID)
		// The deletion aborted the run (its prompt was answered when it
		// settled) and dropped the queue: what still waits was queued.
		orphans = a.takePromptsLocked(ev.SessionID)
	}
	a.mu.Unlock()
	send := a.notify
	if m, ok := ev.Payload.(*engine.MessageEvent); ok && m.Event == "delta" {
		send = a.notifyPiece
	}
	for _, u := range updates {
		send(ev.SessionID, u)
	}
	if after != nil {
		after()
	}
	for _, p := range orphans {
		a.reply(p.rpcID, map[string]any{"stopReason": "cancelled"}, nil)
	}
}

// takePromptsLocked removes and returns the pending prompts of sessionID,
// or of every session for "".
func (a *Agent) takePromptsLocked(sessionID string) []*pendingPrompt {
	var out []*pendingPrompt
	for id, p := range a.prompts {
		if sessionID == "" || p.sessionID == sessionID {
			out = append(out, p)
			delete(a.prompts, id)
		}
	}
	return out
}

func titleUpdate(title string) sessionInfoUpdate {
	t := title
	return sessionInfoUpdate{SessionUpdate: "session_info_update", Title: &t}
}

// messageUpdates: deltas stream as chunks; a finished assistant message
// announces its tool calls and usage; a user message is echoed unless
// this connection sent it; a tool result that no tool event closed (a
// call the stop left unrun) closes its card.
func (a *Agent) messageUpdates(v *view, e *engine.MessageEvent) []any {
	switch e.Event {
	case "delta":
		switch e.Type {
		case "text":
			return []any{chunkUpdate{SessionUpdate: "agent_message_chunk", Content: textBlock(e.Delta), MessageID: e.MessageID}}
		case "thinking":
			return []any{chunkUpdate{SessionUpdate: "agent_thought_chunk", Content: textBlock(e.Delta), MessageID: e.MessageID}}
		}
	case "end":
		m := e.Message
		if m == nil {
			return nil
		}
		switch m.Role {
		case convo.RoleUser:
			if v.ours[m.RequestID] {
				return nil
			}
			return userChunks(*m, e.MessageID)
		case convo.RoleAssistant:
			var out []any
			for _, b := range m.Content {
				if b.Type == convo.BlockToolCall {
					v.tools[b.ID] = &toolView{name: b.Name, args: b.Arguments}
					out = append(out, toolCallStart(b.ID, b.Name, b.Arguments, v.cwd))
				}
			}
			if u, ok := a.usage(m); ok {
				u.Cost = sessionCost(e.Usage)
				out = append(out, u)
			}
			return out
		case convo.RoleToolResult:
			t := v.tools[m.ToolCallID]
			if t != nil && t.ended {
				return nil
			}
			name, args := m.ToolName, json.RawMessage(nil)
			if t != nil {
				name, args = t.name, t.args
				t.ended = true
			}
			return []any{toolCallEnd(m.ToolCallID, name, args, v.cwd, m.Content, m.IsError, nil)}
		}
	}
	return nil
}

func toolUpdates(v *view, e *engine.ToolEvent) []any {
	t := v.tools[e.ToolCallID]
	var out []any
	if t == nil {
		// A view opened after the call was announced: announce it now.
		t = &toolView{name: e.Name, args: e.Input}
		v.tools[e.ToolCallID] = t
		out = append(out, toolCallStart(e.ToolCallID, e.Name, e.Input, v.cwd))
	}
	switch e.Event {
	case "start":
		v.running = e.ToolCallID
		if e.AwaitsApproval {
			// Pending until the user answers: Ask sends in_progress once
			// the call is allowed (toolRuns).
			return out
		}
		t.started = true
		out = append(out, toolCallUpdate{SessionUpdate: "tool_call_update", ToolCallID: e.ToolCallID, Status: "in_progress"})
	case "progress":
		if e.Progress == "" || t.terminalID != "" {
			return out
		}
		t.progress = appendTail(t.progress, e.Progress)
		out = append(out, progressUpdate(e.ToolCallID, t.progress))
	case "end":
		if v.running == e.ToolCallID {
			v.running = ""
		}
		t.ended = true
		t.progress = nil
		end := toolCallEnd(e.ToolCallID, t.name, t.args, v.cwd, e.Result, e.IsError, e.Details)
		if t.terminalID != "" {
			// The released terminal keeps showing the output: the result
			// text would repeat it.
			end.Content = terminalContent(t.terminalID)
		}
		out = append(out, end)
	}
	return out
}

// stateUpdates tells the client what changed in a snapshot: the title,
// the mode, the config options.
func (a *Agent) stateUpdates(v *view, snap *engine.Snapshot) []any {
	var out []any
	if snap.State.Title != v.title {
		v.title = snap.State.Title
		out = append(out, titleUpdate(v.title))
	}
	if snap.State.PermissionPreset != v.mode {
		v.mode = snap.State.PermissionPreset
		out = append(out, currentModeUpdate{SessionUpdate: "current_mode_update", CurrentModeID: v.mode})
	}
	opts := a.configOptions(snap)
	if k := optionsKey(opts); k != v.optionsKey {
		v.optionsKey = k
		out = append(out, configOptionUpdate{SessionUpdate: "config_option_update", ConfigOptions: opts})
	}
	return out
}

// sessionCost is the session's cumulative cost for usage_update, nil
// when it is not known (docs/protocol.md, "Usage").
func sessionCost(u *convo.SessionUsage) *acpCost {
	if u == nil || !u.CostKnown() {
		return nil
	}
	return &acpCost{Amount: u.Cost, Currency: "USD"}
}

// promptUsage is a prompt response's usage: the run's calls.
func promptUsage(u *convo.UsageSum) *acpUsage {
	if u.Calls == 0 {
		return nil
	}
	out := &acpUsage{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.TotalTokens}
	if u.CacheRead > 0 {
		out.CachedReadTokens = &u.CacheRead
	}
	if u.CacheWrite > 0 {
		out.CachedWriteTokens = &u.CacheWrite
	}
	return out
}

// usage reports how full the context is after an assistant message.
func (a *Agent) usage(m *convo.Message) (usageUpdate, bool) {
	if m.Usage == nil {
		return usageUpdate{}, false
	}
	used := m.Usage.TotalTokens
	if used <= 0 {
		used = m.Usage.Input + m.Usage.Output + m.Usage.CacheRead + m.Usage.CacheWrite
	}
	size := 0
	for _, md := range a.eng.Models() {
		if md.Provider == m.Provider && md.ID == m.Model {
			size = md.ContextWindow
		}
	}
	if size <= 0 || used <= 0 {
		return usageUpdate{}, false
	}
	return usageUpdate{SessionUpdate: "usage_update", Used: used, Size: size}, true
}

// userChunks shows a user message: its text, its images, and its attached
// files as the embedded resources they came from.
func userChunks(m convo.Message, msgID string) []any {
	var out []any
	text := m.Text()
	for _, b := range m.Content {
		var c contentBlock
		switch {
		case b.Attachment == convo.AttachmentContext:
			continue // model input only (convo.AttachmentContext)
		case b.Type == convo.BlockText && b.Attachment == "file":
			name, body, ok := parseAttachment(b.Text)
			if !ok {
				c = textBlock(b.Text)
				break
			}
			c = contentBlock{Type: "resource", Resource: &embeddedResource{URI: attachmentURI(text, name), MimeType: "text/plain", Text: &body}}
		case b.Type == convo.BlockText:
			c = textBlock(b.Text)
		case b.Type == convo.BlockImage:
			c = contentBlock{Type: "image", Data: b.Data, MimeType: b.MimeType}
		default:
			continue
		}
		out = append(out, chunkUpdate{SessionUpdate: "user_message_chunk", Content: c, MessageID: msgID})
	}
	return out
}

// parseAttachment reads the engine's file attachment block: a label line,
// then a JSON object {name, text}.
func parseAttachment(s string) (name, text string, ok bool) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return "", "", false
	}
	var f struct {
		Name string `json:"name"`
		Text string `json:"text"`
	}
	if json.Unmarshal([]byte(s[i+1:]), &f) != nil || f.Name == "" {
		return "", "", false
	}
	return f.Name, f.Text, true
}

// attachmentURI finds the uri the prompt mentioned the file by; the
// engine keeps only the name.
func attachmentURI(text, name string) string {
	re := regexp.MustCompile(`\[@` + regexp.QuoteMeta(name) + `\]\(([^)\s]+)\)`)
	if m := re.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return name
}

// Replay ---------------------------------------------------------------------

// replay is session/load's history as the updates a client saw live, in
// order, then the title and the context usage. Call with a.mu held.
func (a *Agent) replay(v *view, snap *engine.Snapshot) []any {
	msgs := snap.State.Messages
	ids := messageIDs(snap)
	var out []any
	calls := map[string]convo.Block{}
	var lastUsage *usageUpdate
	for i := range msgs {
		m := &msgs[i]
		id := ids(i)
		switch m.Role {
		case convo.RoleUser:
			out = append(out, userChunks(*m, id)...)
		case convo.RoleAssistant:
			for _, b := range m.Content {
				switch b.Type {
				case convo.BlockThinking:
					if b.Text != "" {
						out = append(out, chunkUpdate{SessionUpdate: "agent_thought_chunk", Content: textBlock(b.Text), MessageID: id})
					}
				case convo.BlockText:
					if b.Text != "" {
						out = append(out, chunkUpdate{SessionUpdate: "agent_message_chunk", Content: textBlock(b.Text), MessageID: id})
					}
				case convo.BlockToolCall:
					calls[b.ID] = b
					out = append(out, toolCallStart(b.ID, b.Name, b.Arguments, snap.Cwd))
				}
			}
			// A reply that was cancelled or failed carries a zero usage;
			// the client last saw the one before it, live.
			if u, ok := a.usage(m); ok {
				lastUsage = &u
			}
		case convo.RoleToolResult:
			name, args := m.ToolName, json.RawMessage(nil)
			if c, ok := calls[m.ToolCallID]; ok {
				name, args = c.Name, c.Arguments
				delete(calls, m.ToolCallID)
			}
			out = append(out, toolCallEnd(m.ToolCallID, name, args, snap.Cwd, m.Content, m.IsError, nil))
		}
	}
	// Calls still open belong to the running turn: their tool events will
	// close them.
	for id, c := range calls {
		v.tools[id] = &toolView{name: c.Name, args: c.Arguments}
	}
	if d := snap.State.Streaming; d != nil && snap.RunID != "" {
		id := fmt.Sprintf("%s/%d", snap.RunID, len(msgs))
		for _, b := range d.Content {
			switch b.Type {
			case convo.BlockThinking:
				out = append(out, chunkUpdate{SessionUpdate: "agent_thought_chunk", Content: textBlock(b.Text), MessageID: id})
			case convo.BlockText:
				out = append(out, chunkUpdate{SessionUpdate: "agent_message_chunk", Content: textBlock(b.Text), MessageID: id})
			}
		}
	}
	if snap.State.Title != "" {
		out = append(out, titleUpdate(snap.State.Title))
	}
	if lastUsage != nil {
		// The session's cumulative cost now: what the last live update
		// said, and any title generated since.
		lastUsage.Cost = sessionCost(&snap.State.Usage)
		out = append(out, *lastUsage)
	}
	return out
}

// messageIDs gives history index i the id its message had live: the run
// that produced it (from the prompt timings) and its index, as the engine
// names messages.
func messageIDs(snap *engine.Snapshot) func(i int) string {
	owner := map[int]string{}
	end := 0 // where the finished runs' messages end
	// A timing's indexes come from the disk (an imported or damaged
	// session may name any range): only the history's own indexes are
	// walked, so the cost is bounded by the history.
	n := snap.State.MessagesFrom + len(snap.State.Messages)
	for _, t := range snap.State.PromptTimings {
		if !t.MessageStartIndex.Set || !t.MessageEndIndex.Set {
			continue
		}
		for i := max(t.MessageStartIndex.Value, 0); i < min(t.MessageEndIndex.Value, n); i++ {
			owner[i] = t.ID
		}
		end = max(end, min(t.MessageEndIndex.Value, n))
	}
	return func(i int) string {
		run, ok := owner[i]
		switch {
		case ok:
		case snap.RunID != "" && i >= end:
			// A message of the run still going, named as it was live.
			run = snap.RunID
		default:
			run = snap.SessionID
		}
		return fmt.Sprintf("%s/%d", run, i)
	}
}
