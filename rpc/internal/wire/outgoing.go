package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/sourcegraph/jsonrpc2"
)

// Outgoing is one message waiting in the outbox.
type Outgoing struct {
	// Method is the method of a request or notification; empty for a response.
	Method string
	// Notif is true for a notification.
	Notif bool
	// Params holds a request's or notification's params as the sender encoded
	// them (compact JSON), or nil when the message has none.
	Params json.RawMessage
	// Data is scratch space for a Merger.
	Data any
	// Finish, when set, runs on the writer goroutine just before the message
	// is encoded, so a Merger can rebuild Params once instead of at every
	// merge. It must leave Params valid JSON.
	Finish func(o *Outgoing) error

	// unencoded: a Notification, whose params, value, the writer encodes
	// straight into the output (writeNotification); never merged.
	unencoded bool
	value     any

	id       jsonrpc2.ID
	resp     *jsonrpc2.Response
	body     []byte // already encoded: the stream's own replies and anything unusual
	replyKey string // set on a response: the trackKey of the request it answers
}

// mergeable reports whether o is a notification made only of method and
// params, the only kind a Merger is ever shown.
func (o *Outgoing) mergeable() bool {
	return o.Notif && o.Method != "" && o.resp == nil && o.body == nil && !o.unencoded
}

// encode returns the message's JSON body, without HTML escaping: jsonrpc2
// and json.Marshal escape <, > and & in every string, and Loop writes them
// as themselves (docs/protocol.md, "Framing").
func (o *Outgoing) encode() ([]byte, error) {
	b, err := o.encodeEscaped()
	if err != nil {
		return nil, err
	}
	return jsonenc.UnescapeHTML(b), nil
}

func (o *Outgoing) encodeEscaped() ([]byte, error) {
	if o.Finish != nil {
		f := o.Finish
		o.Finish = nil
		if err := f(o); err != nil {
			return nil, fmt.Errorf("finishing merged %s: %w", o.Method, err)
		}
	}
	switch {
	case o.body != nil:
		return o.body, nil
	case o.resp != nil:
		return json.Marshal(o.resp)
	case o.unencoded:
		var buf bytes.Buffer
		w := newFrameWriter(&buf, NDJSON)
		_, werr, err := w.writeNotification(o.Method, o.value)
		if err = errors.Join(werr, err, w.flush()); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
	}
	// The same bytes json.Marshal(jsonrpc2.Request) gives (its keys sorted),
	// without building a map per message.
	method, err := quoteMethod(o.Method)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 48+len(method)+len(o.Params))
	b = append(b, '{')
	if !o.Notif {
		id, err := json.Marshal(o.id)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, `"id":`...), id...), ',')
	}
	b = append(append(b, `"jsonrpc":"2.0","method":`...), method...)
	if o.Params != nil {
		b = append(append(b, `,"params":`...), o.Params...)
	}
	return append(b, '}'), nil
}

// quoteMethod is json.Marshal(method), without its cost for the plain names
// every method has.
func quoteMethod(m string) ([]byte, error) {
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '_' || c == '-' || c == '.' || c == '$') {
			return json.Marshal(m)
		}
	}
	b := make([]byte, 0, len(m)+2)
	return append(append(append(b, '"'), m...), '"'), nil
}

var errEmptyResponse = errors.New("wire: a response needs a result or an error")

// newOutgoing captures obj for the writer goroutine. It copies what it keeps,
// so the caller may reuse obj once WriteObject returns; a *Notification's
// params are the exception, encoded later (Notification).
func newOutgoing(obj any) (*Outgoing, error) {
	if n, ok := obj.(*Notification); ok {
		return n.outgoing(), nil
	}
	req, resp, fromConn, ok := unwrapJSONRPC2(obj)
	if !ok {
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("wire: encoding %T: %w", obj, err)
		}
		return fromBody(b)
	}
	if resp != nil {
		if (resp.Result == nil || len(*resp.Result) == 0) && resp.Error == nil {
			return nil, errEmptyResponse
		}
		if resp.Meta != nil {
			b, err := json.Marshal(resp)
			if err != nil {
				return nil, fmt.Errorf("wire: encoding response: %w", err)
			}
			return &Outgoing{body: b, replyKey: trackKey(resp.ID)}, nil
		}
		r := *resp
		return &Outgoing{resp: &r, replyKey: trackKey(resp.ID)}, nil
	}
	if req.Meta != nil || len(req.ExtraFields) > 0 {
		b, err := json.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("wire: encoding %s: %w", req.Method, err)
		}
		return &Outgoing{Method: req.Method, Notif: req.Notif, body: b}, nil
	}
	o := &Outgoing{Method: req.Method, Notif: req.Notif, id: req.ID}
	if req.Params != nil {
		p := *req.Params
		// Params built by jsonrpc2.Conn (SetParams is json.Marshal) are
		// compact and valid; a hand-built Request might hold anything, and a
		// newline would cut an NDJSON frame in two.
		if fromConn {
			o.Params = p
			return o, nil
		}
		if !json.Valid(p) {
			return nil, fmt.Errorf("wire: %s: params are not valid JSON", req.Method)
		}
		if bytes.ContainsAny(p, "\r\n") {
			var buf bytes.Buffer
			if err := json.Compact(&buf, p); err != nil {
				return nil, fmt.Errorf("wire: %s: compacting params: %w", req.Method, err)
			}
			p = buf.Bytes()
		}
		o.Params = p
	}
	return o, nil
}

// fromBody wraps an already encoded message, keeping what the outbox needs:
// whether it answers a request, and method and params of a plain
// notification so that it can still merge.
func fromBody(b []byte) (*Outgoing, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("wire: an outgoing message must be a JSON object: %w", err)
	}
	// json.Marshal output is compact, also what a MarshalJSON method returned.
	o := &Outgoing{body: b}
	if raw, ok := m["method"]; ok {
		if err := json.Unmarshal(raw, &o.Method); err != nil {
			return nil, fmt.Errorf("wire: outgoing method: %w", err)
		}
		_, hasID := m["id"]
		o.Notif = !hasID
		plain := o.Notif && len(m) <= 3
		for k := range m {
			plain = plain && (k == "jsonrpc" || k == "method" || k == "params")
		}
		if plain {
			o.Params = m["params"]
			o.body = nil
		}
		return o, nil
	}
	if raw, ok := m["id"]; ok {
		if key, ok := idKeyOf(raw); ok {
			o.replyKey = key
		}
	}
	return o, nil
}

var (
	requestPtrType  = reflect.TypeOf((*jsonrpc2.Request)(nil))
	responsePtrType = reflect.TypeOf((*jsonrpc2.Response)(nil))
)

// unwrapJSONRPC2 finds the Request or Response inside what jsonrpc2.Conn
// passes to WriteObject: a *anyMessage, unexported, holding one of
// `request *Request` or `response *Response`. Reading those pointers through
// reflection spares a marshal and re-parse of every message. If a future
// jsonrpc2 changes that layout, ok is false and newOutgoing falls back to
// json.Marshal (TestUnwrapMatchesConn guards the fast path).
func unwrapJSONRPC2(obj any) (req *jsonrpc2.Request, resp *jsonrpc2.Response, fromConn, ok bool) {
	switch m := obj.(type) {
	case *jsonrpc2.Request:
		return m, nil, false, m != nil
	case *jsonrpc2.Response:
		return nil, m, false, m != nil
	case jsonrpc2.Request:
		return &m, nil, false, true
	case jsonrpc2.Response:
		return nil, &m, false, true
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, nil, false, false
	}
	e := v.Elem()
	t := e.Type()
	if t.Kind() != reflect.Struct || t.NumField() != 2 || t.Name() != "anyMessage" || t.PkgPath() != requestPtrType.Elem().PkgPath() ||
		t.Field(0).Name != "request" || t.Field(0).Type != requestPtrType ||
		t.Field(1).Name != "response" || t.Field(1).Type != responsePtrType {
		return nil, nil, false, false
	}
	req = (*jsonrpc2.Request)(e.Field(0).UnsafePointer())
	resp = (*jsonrpc2.Response)(e.Field(1).UnsafePointer())
	if (req == nil) == (resp == nil) {
		return nil, nil, false, false
	}
	return req, resp, true, true
}
