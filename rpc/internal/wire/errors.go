package wire

import (
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"
)

// The error codes JSON-RPC 2.0 reserves. Loop puts its stable, branchable
// name in data.code; these integers only say which broad class it is in.
const (
	ParseError     int64 = -32700
	InvalidRequest int64 = -32600
	MethodNotFound int64 = -32601
	InvalidParams  int64 = -32602
	Internal       int64 = -32603
)

// The data.code names of the errors the stream itself sends.
const (
	DataParseError     = "parse_error"
	DataInvalidRequest = "invalid_request"
	DataMethodNotFound = "method_not_found" // the dispatcher's, for a method no dialect serves
)

// NewError builds a JSON-RPC error whose data is {"code": dataCode, ...extra}.
// dataCode wins over a "code" key in extra, because clients branch on it.
func NewError(code int64, dataCode, message string, extra map[string]any) *jsonrpc2.Error {
	data := make(map[string]any, len(extra)+1)
	for k, v := range extra {
		data[k] = v
	}
	data["code"] = dataCode
	e := &jsonrpc2.Error{Code: code, Message: message}
	b, err := json.Marshal(data)
	if err != nil {
		// An unmarshalable extra value must not lose the error itself.
		b, _ = json.Marshal(map[string]any{"code": dataCode})
	}
	raw := json.RawMessage(b)
	e.Data = &raw
	return e
}

// errorReply is an error response the stream writes on its own. Its id may
// be null, which jsonrpc2.Response cannot express.
type errorReply struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Error   *jsonrpc2.Error  `json:"error"`
}

// encodeErrorReply returns the wire body of an error reply. id is the raw
// JSON of a usable request id, or nil for null.
func encodeErrorReply(id json.RawMessage, code int64, dataCode, message string) []byte {
	r := errorReply{JSONRPC: "2.0", Error: NewError(code, dataCode, message, nil)}
	if id != nil {
		r.ID = &id
	}
	b, err := json.Marshal(r)
	if err != nil {
		// Cannot happen: every part is plain data we built.
		panic("wire: encoding an error reply: " + err.Error())
	}
	return b
}
