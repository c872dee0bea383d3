package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/textcheck"
)

// MaxParams caps the params of every method not marked Unbounded
// (docs/protocol.md, "Messages the server accepts").
const MaxParams = 1 << 20

// Wording is how a dialect words what Decode refuses; the two dialects
// name types and fields differently (docs/protocol.md, docs/acp.md).
type Wording interface {
	// TypeError words a member of the wrong type; "" falls back to
	// "params: " and encoding/json's text.
	TypeError(te *json.UnmarshalTypeError) string
	// UnicodeCode is the data.code of a string that is not valid Unicode
	// at iv.Path: the code the field's own checks would give
	// (invalid_text_files for a file's text, say), else invalid_params.
	UnicodeCode(iv *textcheck.Invalid) engine.Code
}

// Decode unmarshals params into v. Missing or null params decode as {}
// so each method's own checks name the missing field; params that are
// not an object, or hold a string that is not valid Unicode, are
// refused.
//
// Decode takes the params: a long Text (a prompt's text, a file's) may be
// decoded in place, its string then being the params' bytes
// (longtext.go), and *raw is then set to nil so that nothing reads or
// writes them again. raw must be the caller's own (wire.Stream reads
// every request into a buffer of its own) and v a pointer to a zero value.
func Decode(raw *json.RawMessage, v any, w Wording) error {
	data := []byte("{}")
	if raw != nil && !bytes.Equal(bytes.TrimSpace(*raw), []byte("null")) {
		data = *raw
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return InvalidParams("params must be an object")
	}
	// Before decoding: encoding/json would turn such strings into U+FFFD.
	if iv := textcheck.Find(data); iv != nil {
		return &engine.Error{Code: w.UnicodeCode(iv), Message: iv.Error()}
	}
	if decodeInPlace(data, v) {
		*raw = nil
		return nil
	}
	return unmarshal(data, v, w)
}

// unmarshal decodes data into v with encoding/json, its errors in w's
// words.
func unmarshal(data []byte, v any, w Wording) error {
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if msg := w.TypeError(te); msg != "" {
				return InvalidParams("%s", msg)
			}
		}
		return InvalidParams("params: %v", err)
	}
	return nil
}

// InvalidParams is an invalid_params error.
func InvalidParams(format string, args ...any) error {
	return &engine.Error{Code: engine.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}
