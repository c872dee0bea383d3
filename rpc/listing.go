package rpc

import (
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/native"
)

// SessionSummary is a session/list entry (docs/protocol.md 4.11), and
// Model a model/list entry. loop sessions --json and loop models --json
// print them, so the commands and the methods cannot disagree.
type (
	SessionSummary = native.Summary
	Model          = native.Model
)

// SessionSummaryOf is the session/list entry of s.
func SessionSummaryOf(s *engine.Summary) SessionSummary { return native.SummaryOf(s) }

// ModelOf is the model/list entry of m.
func ModelOf(m *engine.Model) Model { return native.ModelOf(m) }
