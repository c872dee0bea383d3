package wire

import (
	"bytes"
	"encoding/json"
)

// A Merger may fold next into prev when both are waiting in the outbox, prev
// immediately before next. It returns true if it did; prev then stands for
// both and next is dropped. It is only shown notifications made of method
// and params, runs with the outbox locked, and must be cheap: set prev.Data
// and prev.Finish to keep merging linear.
type Merger func(prev, next *Outgoing) bool

// NoMerge keeps every message as it is.
func NoMerge(prev, next *Outgoing) bool { return false }

// TextStream names a notification whose text pieces may merge: its
// method, the value of its "event" member that marks a piece, and the
// member that holds the piece's text. The dialect names them (package rpc
// does for the native dialect); the transport knows no method names.
type TextStream struct {
	Method string
	Event  string
	Field  string
}

// MergeText returns a Merger for adjacent streaming pieces: two
// notifications of one of the streams whose "event" is that stream's
// Event, whose Field is a string, and whose other params (sessionId,
// messageId, block, type, toolCallId, ...) are byte-for-byte equal become
// one whose text is the concatenation. The merged params keep the first
// message's bytes around the text.
func MergeText(streams ...TextStream) Merger {
	specs := make(map[string]textSpec, len(streams))
	for _, st := range streams {
		event, _ := json.Marshal(st.Event)
		specs[st.Method] = textSpec{event: event, field: st.Field, quoted: []byte(`"` + st.Field + `"`)}
	}
	return func(prev, next *Outgoing) bool {
		spec, ok := specs[prev.Method]
		if !ok || next.Method != prev.Method || !bytes.Contains(next.Params, spec.quoted) {
			return false
		}
		run, _ := prev.Data.(*deltaRun)
		if run == nil {
			if prev.Data != nil {
				return false
			}
			run = newDeltaRun(prev.Params, spec.event, spec.field)
			if run == nil {
				prev.Data = false // not a piece: do not parse it again
				return false
			}
			prev.Data = run
		}
		if !run.add(next.Params) {
			return false
		}
		prev.Finish = run.finish
		return true
	}
}

// textSpec is a TextStream ready for matching.
type textSpec struct {
	event  []byte // the JSON of the event value
	field  string
	quoted []byte // the field's name as a JSON string
}

// deltaRun is the state of a delta notification others merged into.
type deltaRun struct {
	field          string                     // the member that holds the text
	fields         map[string]json.RawMessage // all params, delta included
	prefix, suffix []byte                     // params around the delta value
	// text is the merged delta as the inside of a JSON string literal:
	// escaped strings concatenate to the escaped concatenation, so merging
	// never unescapes.
	text []byte
}

// newDeltaRun parses a delta notification's params, or returns nil when they
// are not one.
func newDeltaRun(params json.RawMessage, event []byte, field string) *deltaRun {
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil || !bytes.Equal(fields["event"], event) {
		return nil
	}
	start, end, ok := valueSpan(params, field)
	if !ok || !isStringLiteral(params[start:end]) {
		return nil
	}
	return &deltaRun{
		field:  field,
		fields: fields,
		prefix: params[:start],
		suffix: params[end:],
		text:   append([]byte(nil), params[start+1:end-1]...),
	}
}

// add merges the params of the next delta if they differ from the run's
// only in the delta string.
func (r *deltaRun) add(params json.RawMessage) bool {
	// Fast path: the sender marshals one struct type, so everything but the
	// delta is the same bytes in the same place.
	if len(params) >= len(r.prefix)+len(r.suffix)+2 && bytes.HasPrefix(params, r.prefix) && bytes.HasSuffix(params, r.suffix) {
		if lit := params[len(r.prefix) : len(params)-len(r.suffix)]; isStringLiteral(lit) {
			r.text = append(r.text, lit[1:len(lit)-1]...)
			return true
		}
	}
	// Same members in another order or spacing.
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil || len(fields) != len(r.fields) {
		return false
	}
	d, ok := fields[r.field]
	if !ok {
		return false
	}
	var text string
	if json.Unmarshal(d, &text) != nil {
		return false
	}
	for k, v := range fields {
		if pv, ok := r.fields[k]; k != r.field && (!ok || !bytes.Equal(pv, v)) {
			return false
		}
	}
	lit, err := json.Marshal(text)
	if err != nil {
		return false
	}
	r.text = append(r.text, lit[1:len(lit)-1]...)
	return true
}

func (r *deltaRun) finish(o *Outgoing) error {
	p := make([]byte, 0, len(r.prefix)+len(r.text)+2+len(r.suffix))
	p = append(append(p, r.prefix...), '"')
	o.Params = append(append(append(p, r.text...), '"'), r.suffix...)
	return nil
}

// isStringLiteral reports whether b, taken from valid JSON, is exactly one
// string literal: it opens with a quote and its first unescaped closing
// quote is its last byte.
func isStringLiteral(b []byte) bool {
	if len(b) < 2 || b[0] != '"' {
		return false
	}
	for i := 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i == len(b)-1
		}
	}
	return false
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
