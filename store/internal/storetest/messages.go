package storetest

import "github.com/loopdev/loop/convo"

// TextMessage is a message of role holding text, at a fixed time; a tool
// result answers call-1 of the read tool.
func TextMessage(role, text string) convo.Message {
	m := convo.Message{Role: role, Timestamp: 1795972384000, Content: []convo.Block{{Type: convo.BlockText, Text: text}}}
	if role == convo.RoleToolResult {
		m.ToolCallID, m.ToolName = "call-1", "read"
	}
	return m
}

// Turns returns texts as text messages of user, assistant, user, ... in
// turn.
func Turns(texts ...string) []convo.Message {
	msgs := make([]convo.Message, 0, len(texts))
	for i, tx := range texts {
		role := convo.RoleUser
		if i%2 == 1 {
			role = convo.RoleAssistant
		}
		msgs = append(msgs, TextMessage(role, tx))
	}
	return msgs
}
