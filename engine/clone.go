package engine

import (
	"slices"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// Copies of session state for what the engine hands to hosts (snapshots,
// accessors, event payloads). A host may edit what it gets; that must never
// reach the history, the timings or anything a later save writes.

func cloneMessages(msgs []convo.Message) []convo.Message {
	if msgs == nil {
		return nil
	}
	out := make([]convo.Message, len(msgs))
	for i := range msgs {
		out[i] = cloneMessage(msgs[i])
	}
	return out
}

func cloneMessage(m convo.Message) convo.Message {
	m.Content = cloneBlocks(m.Content)
	m.Skills = slices.Clone(m.Skills)
	m.Usage = clonePtr(m.Usage)
	return m
}

func cloneBlocks(blocks []convo.Block) []convo.Block {
	out := slices.Clone(blocks)
	for i := range out {
		out[i].Arguments = slices.Clone(out[i].Arguments)
	}
	return out
}

// cloneTimings copies timings: they hold no pointers, so a slice copy is
// a deep copy.
func cloneTimings(ts []store.PromptTiming) []store.PromptTiming {
	return slices.Clone(ts)
}

func cloneErrorInfo(e *ErrorInfo) *ErrorInfo {
	if e == nil {
		return nil
	}
	c := *e
	if e.Errors != nil {
		c.Errors = make([]ErrorInfo, len(e.Errors))
		for i := range e.Errors {
			c.Errors[i] = *cloneErrorInfo(&e.Errors[i])
		}
	}
	return &c
}

func (m Model) clone() Model {
	m.Efforts = slices.Clone(m.Efforts)
	m.Cost = clonePtr(m.Cost)
	return m
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func ptr[T any](v T) *T { return &v }
