// Package blockjson is a content block with the JSON member names that
// traces (docs/traces.md: a result's content[], a tool's result[], a
// logical request's messages) and the scripted model's request log
// (docs/configuration.md, "The scripted api") write. Both record what a
// model was sent or answered, for people and tests to read; neither is
// the session format (the store's records) or the protocol (the native
// dialect's types), which keep forms of their own.
package blockjson

import "encoding/json"

// Block is convo.Block with JSON names. It keeps convo.Block's fields in
// order, so the two convert directly (Block(b), convo.Block(b)) and a
// field added to one and not the other stops the build.
type Block struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	Signature  string          `json:"signature,omitempty"`
	Attachment string          `json:"attachment,omitempty"`
	Data       string          `json:"data,omitempty"`
	MimeType   string          `json:"mimeType,omitempty"`
	ID         string          `json:"id,omitempty"`
	Name       string          `json:"name,omitempty"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
}
