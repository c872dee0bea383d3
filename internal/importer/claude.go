package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store"
)

// claudeTree are the line types of a Claude Code transcript's conversation
// tree (uuid and parentUuid).
var claudeTree = map[string]bool{"user": true, "assistant": true, "system": true, "attachment": true, "progress": true}

// convertClaude rebuilds a Claude Code transcript (~/.claude/projects/<dir>/
// <sessionId>.jsonl): the main branch, from the last conversation line up
// through parentUuid (and across compaction boundaries through
// logicalParentUuid), becomes the history; assistant lines of one API
// message merge into one message; each tool_result block becomes a tool
// result. Everything else is kept (docs/storage.md, "Imported sessions").
func convertClaude(data []byte, path string) (store.Imported, error) {
	k := newKept()
	lines := k.splitLines(data, 0)
	var imp store.Imported
	h := &imp.Header
	byUUID := map[string]*line{}
	var leaf *line
	conversation := false
	for i := range lines {
		l := &lines[i]
		typ := str(l.obj["type"])
		if t := parseTime(str(l.obj["timestamp"])); t > 0 {
			if h.CreatedAt == 0 {
				h.CreatedAt = t
			}
			h.UpdatedAt = max(h.UpdatedAt, t)
		}
		if !claudeTree[typ] {
			continue
		}
		if id := str(l.obj["uuid"]); id != "" {
			byUUID[id] = l
		}
		side := string(l.obj["isSidechain"]) == "true"
		if (typ == "user" || typ == "assistant") && !side {
			leaf, conversation = l, true
		}
		if h.Cwd == "" && !side {
			h.Cwd = str(l.obj["cwd"])
		}
	}
	if !conversation {
		return imp, fmt.Errorf("%w: no main conversation lines (only titles, or a subagent's transcript)", ErrNoConversation)
	}
	onChain := map[*line]bool{}
	for l := leaf; l != nil && !onChain[l]; {
		onChain[l] = true
		parent := str(l.obj["parentUuid"])
		if parent == "" {
			parent = str(l.obj["logicalParentUuid"])
		}
		l = byUUID[parent]
	}

	rec := &store.MigrationRecord{From: FormatClaude, SourcePath: path}
	toolNames := map[string]string{}
	var customTitle, aiTitle, summaryTitle string
	compactAt := -1 // runtime index of the compaction waiting for its summary
	var lastMsgID string
	var model string // of the latest reply, for a reply an interrupt adds
	for i := range lines {
		l := &lines[i]
		typ := str(l.obj["type"])
		t := parseTime(str(l.obj["timestamp"]))
		if t == 0 {
			t = h.UpdatedAt
		}
		if rec.SourceID == "" {
			rec.SourceID = str(l.obj["sessionId"])
		}
		if rec.SourceApp == "" && str(l.obj["version"]) != "" {
			rec.SourceApp = "claude-code " + str(l.obj["version"])
		}
		switch typ {
		case "custom-title":
			customTitle = str(l.obj["customTitle"])
		case "ai-title":
			aiTitle = str(l.obj["aiTitle"])
		case "summary":
			if leafLine := byUUID[str(l.obj["leafUuid"])]; leafLine != nil && onChain[leafLine] {
				summaryTitle = str(l.obj["summary"])
			}
		}
		if !claudeTree[typ] {
			k.entry(l, t, typ, false)
			continue
		}
		if !onChain[l] {
			k.entry(l, t, typ, true)
			continue
		}
		msg := object(l.obj["message"])
		switch {
		case typ == "system" && str(l.obj["subtype"]) == "compact_boundary":
			meta := object(l.obj["compactMetadata"])
			var tokens int
			json.Unmarshal(meta["preTokens"], &tokens)
			compactAt = len(k.rt)
			k.add(store.RuntimeCompaction, t, compactionData(str(l.obj["uuid"]), "", len(imp.Messages), tokens, t, l.obj["compactMetadata"]))
			h.Compaction = &store.CompactionMeta{ID: str(l.obj["uuid"]), MessageCount: len(imp.Messages), TokensBefore: tokens, CreatedAt: t}
			k.entry(l, t, "system compact_boundary", false)
		case typ == "user" && string(l.obj["isCompactSummary"]) == "true":
			if compactAt >= 0 {
				var d map[string]any
				json.Unmarshal(k.rt[compactAt].Data, &d)
				d["summary"] = userText(msg["content"])
				k.rt[compactAt].Data = mustJSON(d)
				compactAt = -1
			}
			k.entry(l, t, "compaction summary", false)
		case typ == "user" && harnessTurn(l.obj, msg):
			k.entry(l, t, "harness user turn", false)
		case typ == "user":
			lastMsgID = ""
			claudeUser(&imp, k, l, t, msg, toolNames, model)
		case typ == "assistant" && (string(l.obj["isApiErrorMessage"]) == "true" || str(msg["model"]) == "<synthetic>"):
			k.entry(l, t, "synthetic assistant message", false)
		case typ == "assistant":
			id := str(msg["id"])
			n := len(imp.Messages)
			if id == "" || id != lastMsgID || n == 0 || imp.Messages[n-1].Role != convo.RoleAssistant {
				imp.Messages = append(imp.Messages, convo.Message{Role: convo.RoleAssistant, Provider: "anthropic", Timestamp: t, Content: []convo.Block{}})
				n++
			}
			lastMsgID = id
			claudeAssistant(&imp.Messages[n-1], k, n-1, l, t, msg, toolNames)
			model = imp.Messages[n-1].Model
		default:
			k.entry(l, t, typ+" "+str(l.obj["subtype"]), false)
		}
	}
	for i := range imp.Messages {
		m := &imp.Messages[i]
		if m.Role == convo.RoleAssistant && m.StopReason == "" {
			m.StopReason = convo.StopEnd
			for _, b := range m.Content {
				if b.Type == convo.BlockToolCall {
					m.StopReason = convo.StopToolUse
				}
			}
		}
		if m.Role == convo.RoleAssistant && m.Model != "" {
			h.Model = &store.ModelRef{Provider: "anthropic", ID: m.Model}
		}
	}
	switch {
	case customTitle != "":
		h.Title, h.TitleSource = customTitle, store.TitleManual
	case aiTitle != "":
		h.Title, h.TitleSource = aiTitle, store.TitleAuto
	case summaryTitle != "":
		h.Title, h.TitleSource = summaryTitle, store.TitleAuto
	}
	rec.Notes = append(k.notes(), "subagent transcripts in other files (agent-*.jsonl) are not part of this session")
	h.Migration = rec
	imp.Runtime = k.rt
	return imp, nil
}

// harnessTurn reports a user line the harness wrote, not the person: meta
// text, slash-command wrappers, a background task's notification.
func harnessTurn(obj, msg map[string]raw) bool {
	if string(obj["isMeta"]) == "true" || str(object(obj["origin"])["kind"]) == "task-notification" {
		return true
	}
	text := strings.TrimSpace(userTextStart(msg["content"]))
	for _, p := range []string{"<command-name>", "<local-command-stdout>", "<local-command-caveat>", "<command-message>", "<task-notification>"} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// userText is the text of a user line's content (a string or blocks).
func userText(content raw) string {
	if s, ok := jsonenc.DecodeString(content); ok {
		return s
	}
	var parts []string
	for _, b := range objects(content) {
		if str(b["type"]) == "text" {
			parts = append(parts, str(b["text"]))
		}
	}
	return strings.Join(parts, "\n")
}

// userTextStart is the start of userText, its first few KB: what tells a
// harness's line, without decoding a long prompt only to look at it.
func userTextStart(content raw) string {
	const n = 4096
	if len(content) > 0 && content[0] == '"' {
		return prefix(content, n)
	}
	var b strings.Builder
	for _, blk := range objects(content) {
		if b.Len() > n {
			break
		}
		if str(blk["type"]) == "text" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(prefix(blk["text"], n))
		}
	}
	return b.String()
}

// claudeInterrupt reports the text of the user line Claude Code writes
// when the user stops a turn: while the reply streamed, or while its tools
// ran ("for tool use"). It is the harness's, not a prompt.
func claudeInterrupt(text string) bool {
	switch strings.TrimSpace(text) {
	case "[Request interrupted by user]", "[Request interrupted by user for tool use]":
		return true
	}
	return false
}

// claudeUser maps a user line: a prompt, tool results (one message each),
// or the marker of an interrupted turn, which ends that turn in an aborted
// reply (model is the latest reply's).
func claudeUser(imp *store.Imported, k *kept, l *line, t int64, msg map[string]raw, toolNames map[string]string, model string) {
	fields := without(l.obj, "message", "type", "timestamp")
	for name, v := range without(msg, "role", "content") {
		fields["message."+name] = v
	}
	if s, ok := jsonenc.DecodeString(msg["content"]); ok {
		if claudeInterrupt(s) {
			imp.Messages = interrupt(imp.Messages, t, "anthropic", model)
			k.entry(l, t, "interrupt marker", false)
			return
		}
		imp.Messages = append(imp.Messages, convo.Message{Role: convo.RoleUser, Timestamp: t, Content: []convo.Block{{Type: convo.BlockText, Text: s}}})
		k.field(len(imp.Messages)-1, l, t, fields)
		return
	}
	blocks := objects(msg["content"])
	// A command the user stopped while it ran failed, as the engine
	// records its own (toolUseResult is the tool's own account of it).
	stopped := string(object(l.obj["toolUseResult"])["interrupted"]) == "true"
	prompt := convo.Message{Role: convo.RoleUser, Timestamp: t, Content: []convo.Block{}}
	first := len(imp.Messages)
	interrupted := false
	for i, b := range blocks {
		switch str(b["type"]) {
		case "text":
			if text := str(b["text"]); claudeInterrupt(text) {
				interrupted = true
				fields[fmt.Sprintf("message.content[%d]", i)] = mustJSON(b)
			} else {
				prompt.Content = append(prompt.Content, convo.Block{Type: convo.BlockText, Text: text})
			}
		case "image":
			if blk, ok := claudeImage(b); ok {
				prompt.Content = append(prompt.Content, blk)
			} else {
				fields[fmt.Sprintf("message.content[%d]", i)] = mustJSON(b)
			}
		case "tool_result":
			id := str(b["tool_use_id"])
			r := convo.Message{Role: convo.RoleToolResult, Timestamp: t, ToolCallID: id, ToolName: toolNames[id], IsError: string(b["is_error"]) == "true" || stopped, Content: []convo.Block{}}
			if text, ok := jsonenc.DecodeString(b["content"]); ok {
				r.Content = append(r.Content, convo.Block{Type: convo.BlockText, Text: text})
			} else {
				for j, ib := range objects(b["content"]) {
					switch str(ib["type"]) {
					case "text":
						r.Content = append(r.Content, convo.Block{Type: convo.BlockText, Text: str(ib["text"])})
					case "image":
						if blk, ok := claudeImage(ib); ok {
							r.Content = append(r.Content, blk)
							continue
						}
						fallthrough
					default:
						fields[fmt.Sprintf("message.content[%d].content[%d]", i, j)] = mustJSON(ib)
					}
				}
			}
			imp.Messages = append(imp.Messages, r)
		default:
			fields[fmt.Sprintf("message.content[%d]", i)] = mustJSON(b)
		}
	}
	results := len(imp.Messages) - first
	if interrupted {
		// After the results of the stopped turn's tools, before any
		// prompt typed with the marker.
		imp.Messages = interrupt(imp.Messages, t, "anthropic", model)
	}
	promptAt := -1
	if len(prompt.Content) > 0 {
		promptAt = len(imp.Messages)
		imp.Messages = append(imp.Messages, prompt)
	}
	switch {
	case results > 0:
		k.field(first, l, t, fields)
	case promptAt >= 0:
		k.field(promptAt, l, t, fields)
	case interrupted:
		k.entry(l, t, "interrupt marker", false)
	default:
		k.entry(l, t, "user line without content", false)
	}
}

func claudeImage(b map[string]raw) (convo.Block, bool) {
	src := object(b["source"])
	if str(src["type"]) != "base64" || str(src["data"]) == "" {
		return convo.Block{}, false
	}
	return convo.Block{Type: convo.BlockImage, Data: str(src["data"]), MimeType: str(src["media_type"])}, true
}

// claudeAssistant adds one assistant line's blocks to m (message i).
func claudeAssistant(m *convo.Message, k *kept, i int, l *line, t int64, msg map[string]raw, toolNames map[string]string) {
	fields := without(l.obj, "message", "type", "timestamp")
	for name, v := range without(msg, "role", "content", "model", "usage", "stop_reason") {
		fields["message."+name] = v
	}
	if model := str(msg["model"]); model != "" {
		m.Model = model
	}
	switch str(msg["stop_reason"]) {
	case "end_turn", "stop_sequence", "pause_turn":
		m.StopReason = convo.StopEnd
	case "tool_use":
		m.StopReason = convo.StopToolUse
	case "max_tokens":
		m.StopReason = convo.StopLength
	case "":
	default:
		fields["message.stop_reason"] = msg["stop_reason"]
	}
	if u := object(msg["usage"]); u != nil {
		var in, out, cr, cw int
		json.Unmarshal(u["input_tokens"], &in)
		json.Unmarshal(u["output_tokens"], &out)
		json.Unmarshal(u["cache_read_input_tokens"], &cr)
		json.Unmarshal(u["cache_creation_input_tokens"], &cw)
		// The usage is repeated on every line of one API message.
		m.Usage = &convo.Usage{Input: in, Output: out, CacheRead: cr, CacheWrite: cw, TotalTokens: in + out + cr + cw}
		for name, v := range without(u, "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens") {
			fields["message.usage."+name] = v
		}
	}
	for j, b := range objects(msg["content"]) {
		switch str(b["type"]) {
		case "text":
			m.Content = append(m.Content, convo.Block{Type: convo.BlockText, Text: str(b["text"])})
		case "thinking":
			m.Content = append(m.Content, convo.Block{Type: convo.BlockThinking, Text: str(b["thinking"]), Signature: str(b["signature"])})
		case "tool_use":
			// A copy: the message outlives the source's bytes.
			args := json.RawMessage(bytes.Clone(b["input"]))
			if len(args) == 0 || string(args) == "null" {
				args = json.RawMessage("{}")
			}
			id := str(b["id"])
			toolNames[id] = str(b["name"])
			m.Content = append(m.Content, convo.Block{Type: convo.BlockToolCall, ID: id, Name: str(b["name"]), Arguments: args})
		default:
			fields[fmt.Sprintf("message.content[%d]", j)] = mustJSON(b)
		}
	}
	k.field(i, l, t, fields)
}

func mustJSON(v any) []byte {
	b, _ := jsonenc.Marshal(v)
	return b
}
