package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/sourcegraph/jsonrpc2"
)

type msgKind int

const (
	kindRequest      msgKind = iota // has method and id: must be answered
	kindNotification                // has method, no id
	kindResponse                    // answers one of our requests
	kindDrop                        // valid but useless to jsonrpc2: a response with id null
)

// verdict is what classify decided about one frame.
type verdict struct {
	kind  msgKind
	idKey string // requests and responses: the id as trackKey spells it
	// reject, when set, is the error reply to send instead of passing the
	// frame on.
	reject *rejection
	// why explains a kindDrop.
	why string
	// params are a request's or notification's params as the frame holds
	// them (a slice of it); nil when absent or null.
	params json.RawMessage
	// head, when params are set, is the frame without them: what jsonrpc2
	// decodes (ReadObject).
	head []byte
}

type rejection struct {
	id       json.RawMessage // nil means null
	code     int64
	dataCode string
	message  string
}

func parseFailure(msg string) *rejection {
	return &rejection{code: ParseError, dataCode: DataParseError, message: msg}
}

func invalid(id json.RawMessage, msg string) *rejection {
	return &rejection{id: id, code: InvalidRequest, dataCode: DataInvalidRequest, message: "invalid request: " + msg}
}

// classify checks one frame against JSON-RPC 2.0 and against what jsonrpc2
// v0.2.3 can digest without closing the connection: it rejects ids it would
// mangle (negative or fractional numbers), null request ids (it would take
// them for notifications and never answer) and error objects it cannot
// decode.
func classify(b []byte) verdict {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '[' {
		if json.Valid(t) {
			return verdict{reject: invalid(nil, "batches are not supported")}
		}
	}
	var m members
	if err := json.Unmarshal(t, &m); err != nil {
		if json.Valid(t) {
			return verdict{reject: invalid(nil, "a message must be a JSON object")}
		}
		return verdict{reject: parseFailure("parse error: " + jsonErrText(err))}
	}
	if m == nil {
		return verdict{reject: invalid(nil, "a message must be a JSON object")}
	}
	idRaw, hasID := m.get("id")
	idKey, idOK := idKeyOf(idRaw)
	var usableID json.RawMessage
	if hasID && idOK {
		usableID = idRaw
	}
	version, hasVersion := m.get("jsonrpc")
	versionOK := hasVersion && bytes.Equal(bytes.TrimSpace(version), []byte(`"2.0"`))
	methodRaw, hasMethod := m.get("method")
	_, hasResult := m.get("result")
	errRaw, hasError := m.get("error")
	if hasError && isNull(errRaw) && hasResult {
		hasError = false // {"result":x,"error":null} is a plain success
	}

	if hasMethod {
		var method string
		switch {
		case json.Unmarshal(methodRaw, &method) != nil:
			return verdict{reject: invalid(usableID, "method must be a string")}
		case !versionOK:
			return verdict{reject: invalid(usableID, `"jsonrpc" must be "2.0"`)}
		case hasResult || hasError:
			return verdict{reject: invalid(usableID, "a message cannot have both method and result or error")}
		case hasID && !idOK:
			return verdict{reject: invalid(nil, "id must be a string or a non-negative integer")}
		}
		p, ok := m.get("params")
		if ok && !isNull(p) && !isStructured(p) {
			return verdict{reject: invalid(usableID, "params must be an object or an array")}
		}
		if !ok || isNull(p) {
			p = nil
		}
		vd := verdict{kind: kindRequest, idKey: idKey, params: p}
		if !hasID {
			vd = verdict{kind: kindNotification, params: p}
		}
		if p != nil {
			vd.head = m.without("params")
		}
		return vd
	}

	if !hasResult && !hasError {
		return verdict{reject: invalid(usableID, "a message needs a method, a result or an error")}
	}
	// A response's id is one of ours, so an error about a broken response
	// must not carry it: the client would take it for the answer to its own
	// request with that id.
	switch {
	case !versionOK:
		return verdict{reject: invalid(nil, `response: "jsonrpc" must be "2.0"`)}
	case hasResult && hasError:
		return verdict{reject: invalid(nil, "response: cannot have both result and error")}
	case !hasID:
		return verdict{reject: invalid(nil, "response: id is missing")}
	}
	if hasError {
		var e jsonrpc2.Error
		if !isObject(errRaw) || json.Unmarshal(errRaw, &e) != nil {
			return verdict{reject: invalid(nil, "response: error must be an object with an integer code and a string message")}
		}
	}
	if isNull(idRaw) {
		why := "response with id null"
		if hasError {
			why += ": " + string(clip(errRaw))
		}
		return verdict{kind: kindDrop, why: why}
	}
	if !idOK {
		return verdict{reject: invalid(nil, "response: id must be a string or a non-negative integer")}
	}
	return verdict{kind: kindResponse, idKey: idKey}
}

// member is one member of a frame's top-level object: a slice of the
// frame, not a copy. json.RawMessage would copy every member, the params
// of a 50 MB prompt among them; the frame is the reader's own, read for
// this message alone and never written to, and params handed on alias it
// (ReadObject). encoding/json's Unmarshal passes a value's own bytes of
// its input to UnmarshalJSON.
type member []byte

func (m *member) UnmarshalJSON(b []byte) error {
	*m = b
	return nil
}

type members map[string]member

func (m members) get(name string) (json.RawMessage, bool) {
	v, ok := m[name]
	return json.RawMessage(v), ok
}

// without encodes the object of m without the member name.
func (m members) without(name string) []byte {
	b := []byte{'{'}
	for k, v := range m {
		if k == name {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		q, _ := json.Marshal(k) // a string always encodes
		b = append(append(append(b, q...), ':'), v...)
	}
	return append(b, '}')
}

// idKeyOf returns the tracking key of a raw id, and whether jsonrpc2 can
// carry the id back unchanged: a string or an integer in [0, MaxInt64].
func idKeyOf(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s:" + s, true
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 {
		return "", false
	}
	return "n:" + strconv.FormatInt(n, 10), true
}

// trackKey spells a jsonrpc2.ID the way idKeyOf does.
func trackKey(id jsonrpc2.ID) string {
	if id.IsString {
		return "s:" + id.Str
	}
	return "n:" + strconv.FormatUint(id.Num, 10)
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

func isStructured(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// jsonErrText trims encoding/json's error to the part a client can act on.
func jsonErrText(err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return se.Error() + " at offset " + strconv.FormatInt(se.Offset, 10)
	}
	return err.Error()
}
