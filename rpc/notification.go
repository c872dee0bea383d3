package rpc

import (
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/native"
	"github.com/loopdev/loop/rpc/internal/wire"
)

// Notification is one native notification as the server writes it
// (docs/protocol.md "Notifications"): the same members in the same order.
type Notification = native.Notification

// NotificationOf is the server's translation of an engine event into the
// native dialect; ok is false for events that dialect does not send.
// Other hosts that print the protocol's notifications (loop run's
// stream-json output) use it, so the two can never disagree. Its
// session/state carries the complete snapshot (capabilities.stateMessages
// true).
func NotificationOf(ev engine.Event) (n Notification, ok bool) { return notificationFor(ev, nil) }

// notificationFor is NotificationOf for a client whose session/state
// snapshots snapshot picks (capabilities.stateMessages false or "delta":
// the server's stateSnapshot); nil picks the complete one.
func notificationFor(ev engine.Event, snapshot func(*engine.StateEvent) *engine.Snapshot) (n Notification, ok bool) {
	method, ok := eventMethods[ev.Kind]
	if !ok {
		return Notification{}, false
	}
	var params any
	if st, isState := ev.Payload.(*engine.StateEvent); isState && snapshot != nil {
		params = &native.StateUpdate{SessionID: st.SessionID, Snapshot: native.SnapshotOf(snapshot(st))}
	} else if params, ok = native.EventParams(ev.Payload); !ok {
		return Notification{}, false
	}
	return Notification{JSONRPC: "2.0", Method: method, Params: params}, true
}

// textStreams are the native notifications whose text pieces the outbox
// merges while the client lags: message deltas and tool output
// (docs/protocol.md 2.5). The transport knows no method names; the
// dialect names them.
func textStreams() []wire.TextStream {
	return []wire.TextStream{
		{Method: "session/message", Event: "delta", Field: "delta"},
		{Method: "session/tool", Event: "progress", Field: "progress"},
	}
}
