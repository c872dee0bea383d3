package wire

import (
	"encoding/json"
	"fmt"
)

// Notification is a notification whose params the stream's writer
// goroutine encodes, just before it writes the message: WriteObject of a
// *Notification only queues it. A sender that must not spend its time
// encoding (one holding a lock, like the engine's event delivery) hands
// over the value instead. Nothing may change Params afterwards. A
// Notification is never merged: send pieces of a stream that should merge
// (MergeText) as ordinary notifications.
type Notification struct {
	Method string
	Params any // nil: no params member
}

func (n *Notification) outgoing() *Outgoing {
	o := &Outgoing{Method: n.Method, Notif: true, unencoded: true}
	if n.Params != nil {
		params := n.Params
		o.Finish = func(o *Outgoing) error {
			b, err := json.Marshal(params)
			if err != nil {
				return fmt.Errorf("encoding %s params: %w", o.Method, err)
			}
			o.Params = b
			return nil
		}
	}
	return o
}
