package rpc

import (
	"encoding/json"

	"github.com/loopdev/loop/engine"
)

// stateMode is what a client's session/state notifications carry of a
// long history (initialize's capabilities.stateMessages, docs/protocol.md
// "What session/state carries").
type stateMode int

const (
	stateAll   stateMode = iota // true, the default: the whole history and every timing
	stateNone                   // false: no messages; the timings added or changed since the previous session/state
	stateDelta                  // "delta": the messages and timings added or changed since the previous session/state
)

// parseStateMode reads capabilities.stateMessages.
func parseStateMode(raw json.RawMessage) (stateMode, error) {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		if b {
			return stateAll, nil
		}
		return stateNone, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s == "delta" {
		return stateDelta, nil
	}
	return stateAll, invalidParams(`capabilities.stateMessages must be true, false or "delta", not %s`, raw)
}

// stateSnapshot is the snapshot a session/state notification carries to
// this client. For false and "delta" it is cut at the client's baseline:
// what the previous session/state notification of that session, or the
// reply to a session/get of it, carried to this connection. Both reach the
// client in the order they are built, under the session's sequence lock,
// through one outbox (the reply: sessionGet, Session.SnapshotFromInOrder);
// the other commands' snapshot replies do not count, since a notification
// built after one of them may be written before it. It runs under the
// event's sequence lock, so one session's baselines are read and replaced
// one event at a time.
func (s *Server) stateSnapshot(ev *engine.StateEvent) *engine.Snapshot {
	s.mu.Lock()
	mode := s.stateMode
	held := s.held[ev.SessionID]
	s.mu.Unlock()
	if mode == stateAll {
		return ev.Snapshot()
	}
	snap, next := ev.SnapshotSince(held, mode == stateDelta)
	s.mu.Lock()
	if s.stateMode == mode {
		s.held[ev.SessionID] = next
	}
	s.mu.Unlock()
	return snap
}

// forget drops a deleted session's baseline: the map holds one entry per
// session this connection was sent a session/state of, and no more.
func (s *Server) forget(ev engine.Event) {
	if p, ok := ev.Payload.(*engine.SessionsChangedEvent); ok && p.Deleted {
		s.mu.Lock()
		delete(s.held, p.SessionID)
		s.mu.Unlock()
	}
}
