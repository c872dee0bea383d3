// Package jsonenc encodes JSON the way Loop writes it everywhere (the wire
// in both dialects, history files, model requests, logs): like
// encoding/json, but without its HTML escaping, so that <, > and & stay
// themselves instead of becoming \u003c, \u003e and \u0026
// (docs/protocol.md, "Framing"). It also writes and reads long strings
// with one copy where encoding/json makes several: AppendString and
// QuotedLen, Raw and DecodeString (docs/performance.md, "Import").
package jsonenc

import (
	"bytes"
	"encoding/json"
	"io"
)

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// MarshalIndent is json.MarshalIndent without HTML escaping.
func MarshalIndent(v any, prefix, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// NewEncoder is json.NewEncoder without HTML escaping.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// UnescapeHTML turns the escapes \u003c, \u003e and \u0026 inside the
// strings of valid JSON back into <, > and &, leaving every other byte
// as it is. The result means the same JSON. It is for bytes encoded by
// code Loop does not control (jsonrpc2 marshals params and results with
// json.Marshal, and even a json.RawMessage passed through json.Marshal is
// escaped again). b is never modified; it is returned as it is when
// nothing needs rewriting.
func UnescapeHTML(b []byte) []byte {
	var out []byte // nil until the first escape to rewrite
	done := 0      // b[:done] is in out already
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			break
		}
		i += j
		// Outside strings valid JSON has no backslash, so every one starts
		// an escape; skipping whole escapes keeps \\u003c (a backslash,
		// then the text u003c) as it is.
		if i+1 < len(b) && b[i+1] != 'u' {
			i += 2
			continue
		}
		if i+6 > len(b) {
			break
		}
		var c byte
		switch string(b[i+2 : i+6]) {
		case "003c", "003C":
			c = '<'
		case "003e", "003E":
			c = '>'
		case "0026":
			c = '&'
		}
		if c == 0 {
			i += 6
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(append(out, b[done:i]...), c)
		i += 6
		done = i
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}
