package acp

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/loopdev/loop/rpc/internal/wire"
)

// MergeChunks is a wire.Merger for ACP: while the client lags, adjacent
// session/update text chunks of one message (same session, same kind,
// same messageId) become one chunk with the texts concatenated. A client
// that keeps up sees every chunk as sent. Only the chunks of a live reply
// are candidates: the agent queues every other update unencoded (with
// Options.Outbox), and those never merge. Compose it with the native
// merger when one stream may carry either dialect:
//
//	native := wire.MergeText(streams...)
//	Merger: func(p, n *wire.Outgoing) bool { return native(p, n) || acp.MergeChunks(p, n) }
func MergeChunks(prev, next *wire.Outgoing) bool {
	const method = "session/update"
	if prev.Method != method || next.Method != method || !bytes.Contains(next.Params, []byte(`_chunk"`)) {
		return false
	}
	run, _ := prev.Data.(*chunkRun)
	if run == nil {
		if prev.Data != nil {
			return false
		}
		run = parseChunk(prev.Params)
		if run == nil {
			prev.Data = false // not a text chunk: do not parse it again
			return false
		}
		prev.Data = run
	}
	n := parseChunk(next.Params)
	if n == nil || n.sessionID != run.sessionID || n.kind != run.kind || n.messageID != run.messageID {
		return false
	}
	run.text = append(run.text, n.text...)
	prev.Finish = run.finish
	return true
}

// chunkRun is a text chunk others were merged into.
type chunkRun struct {
	sessionID string
	kind      string
	messageID string
	text      []byte
}

func parseChunk(params json.RawMessage) *chunkRun {
	var p struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string `json:"sessionUpdate"`
			MessageID     string `json:"messageId"`
			Content       struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"update"`
	}
	if json.Unmarshal(params, &p) != nil || p.Update.Content.Type != "text" {
		return nil
	}
	switch p.Update.SessionUpdate {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk":
	default:
		return nil
	}
	return &chunkRun{sessionID: p.SessionID, kind: p.Update.SessionUpdate, messageID: p.Update.MessageID, text: []byte(p.Update.Content.Text)}
}

func (r *chunkRun) finish(o *wire.Outgoing) error {
	params, err := json.Marshal(sessionNotification{SessionID: r.sessionID, Update: chunkUpdate{
		SessionUpdate: r.kind, Content: textBlock(string(r.text)), MessageID: r.messageID,
	}})
	if err != nil {
		return fmt.Errorf("encoding merged chunk: %w", err)
	}
	o.Params = params
	return nil
}
