package main

import (
	"strings"
	"testing"
)

// TestChatForkAndRewindGoBackInTheConversation drives /rewind (the list
// of user messages, then a rewind to before one of them) and /fork in the
// chat on a pseudo-terminal.
func TestChatForkAndRewindGoBackInTheConversation(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"one","steps":[{"text":"first answer"}]},
		{"match":"two","steps":[{"text":"second answer"}]},
		{"match":"three","steps":[{"text":"third answer"}]},
		{"match":"four","steps":[{"text":"fourth answer"}]}
	]}`)
	c := startChat(t, data, proj)
	c.see("loop chat: session ")
	first := strings.Fields(strings.TrimPrefix(c.screen()[0], "loop chat: session "))[0]
	c.keys("question one\r")
	c.see("first answer")
	c.see("> ")
	c.keys("question two\r")
	c.see("second answer")
	c.see("> ")

	c.keys("/rewind\r")
	c.see("user messages (/rewind N continues from just before message N):")
	c.see("  0  question one")
	c.see("  1  question two")
	c.keys("/rewind 7\r")
	c.see("usage: /rewind [N] (N from 0 to 1; /rewind lists them)")
	c.keys("/rewind 1\r")
	c.see("rewound to before message 1 (2 messages kept); what was dropped is session ")
	c.keys("question three\r")
	c.see("third answer")
	c.see("> ")
	c.keys("/sessions\r")
	c.see("4 messages")

	c.keys("/fork 2\r")
	c.see("forked " + first + " at 2 messages: now in session ")
	c.keys("question four\r")
	c.see("fourth answer")
	c.see("> ")
	c.keys("/fork 9\r")
	c.see("invalid_params")
}
