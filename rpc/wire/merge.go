package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A Merger may fold next into prev when both are waiting in the outbox, prev
// immediately before next. It returns true if it did; prev then stands for
// both and next is dropped. It is only shown notifications made of method
// and params, runs with the outbox locked, and must be cheap: set prev.Data
// and prev.Finish to keep merging linear.
type Merger func(prev, next *Outgoing) bool

// NoMerge keeps every message as it is.
func NoMerge(prev, next *Outgoing) bool { return false }

// DeltaMethod is the notification MergeDeltas merges.
const DeltaMethod = "session/message"

// MergeDeltas merges adjacent streaming deltas of one message block:
// two session/message notifications with "event":"delta" and a string
// "delta", whose other params (sessionId, messageId, block, type, ...) are
// byte-for-byte equal, become one whose delta is the concatenation. The
// merged params keep the first message's key order.
func MergeDeltas(prev, next *Outgoing) bool {
	if prev.Method != DeltaMethod || next.Method != DeltaMethod || !bytes.Contains(next.Params, []byte(`"delta"`)) {
		return false
	}
	run, _ := prev.Data.(*deltaRun)
	if run == nil {
		if prev.Data != nil {
			return false
		}
		run = newDeltaRun(prev.Params)
		if run == nil {
			prev.Data = false // not a delta: do not parse it again
			return false
		}
		prev.Data = run
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(next.Params, &fields) != nil || len(fields) != len(run.fields) {
		return false
	}
	var text string
	if d, ok := fields["delta"]; !ok || json.Unmarshal(d, &text) != nil {
		return false
	}
	for k, v := range fields {
		if k == "delta" {
			continue
		}
		if pv, ok := run.fields[k]; !ok || !bytes.Equal(pv, v) {
			return false
		}
	}
	run.text = append(run.text, text...)
	prev.Finish = run.finish
	return true
}

// deltaRun is the state of a delta notification others merged into.
type deltaRun struct {
	fields         map[string]json.RawMessage // all params, delta included
	prefix, suffix []byte                     // params around the delta value
	text           []byte                     // the merged delta text
}

// newDeltaRun parses a delta notification's params, or returns nil when they
// are not one.
func newDeltaRun(params json.RawMessage) *deltaRun {
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil || !bytes.Equal(fields["event"], []byte(`"delta"`)) {
		return nil
	}
	var text string
	if d, ok := fields["delta"]; !ok || json.Unmarshal(d, &text) != nil {
		return nil
	}
	start, end, ok := valueSpan(params, "delta")
	if !ok {
		return nil
	}
	return &deltaRun{fields: fields, prefix: params[:start], suffix: params[end:], text: []byte(text)}
}

func (r *deltaRun) finish(o *Outgoing) error {
	q, err := json.Marshal(string(r.text))
	if err != nil {
		return fmt.Errorf("encoding merged delta: %w", err)
	}
	p := make([]byte, 0, len(r.prefix)+len(q)+len(r.suffix))
	o.Params = append(append(append(p, r.prefix...), q...), r.suffix...)
	return nil
}

// valueSpan finds the byte range of the last top-level member key's value
// (the one json.Unmarshal keeps when a key repeats).
func valueSpan(obj []byte, key string) (start, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, 0, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, 0, false
		}
		if k, _ := t.(string); k == key {
			end = int(dec.InputOffset())
			start, ok = end-len(raw), true
		}
	}
	return start, end, ok
}
