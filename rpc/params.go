package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/native"
	"github.com/loopdev/loop/rpc/internal/textcheck"
)

var sprintf = fmt.Sprintf

// nativeWording words refused params as docs/protocol.md does; every
// native method decodes its params with it (dispatch.Typed, methods.go).
type nativeWording struct{}

func (nativeWording) TypeError(te *json.UnmarshalTypeError) string {
	return sprintf("%s must be %s", te.Field, jsonKind(te.Type.Kind().String()))
}

// UnicodeCode: a string that is not valid Unicode gets the code the
// field's own checks would give: a file's name or text is
// invalid_text_files, an image's fields invalid_images (docs/protocol.md).
func (nativeWording) UnicodeCode(iv *textcheck.Invalid) engine.Code {
	switch iv.Top() {
	case "files":
		return engine.CodeInvalidTextFiles
	case "images":
		return engine.CodeInvalidImages
	}
	return engine.CodeInvalidParams
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "float64":
		return "a number"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "of another type"
}

// resolveScope reads a workspaceId that may be null (independent chats):
// the workspace id, "" for null; missing or a non-string is invalid.
func resolveScope(field string, s native.Scope) (string, error) {
	if s == nil {
		return "", invalidParams("%s is required (a workspace id, or null for independent chats)", field)
	}
	if bytes.Equal(s, []byte("null")) {
		return "", nil
	}
	var id string
	if err := json.Unmarshal(s, &id); err != nil || id == "" {
		return "", invalidParams("%s must be a workspace id string or null", field)
	}
	return id, nil
}

// required checks that a string field is present and not empty.
func required(name, v string) error {
	if v == "" {
		return invalidParams("%s is required", name)
	}
	return nil
}

// strictBool accepts only JSON true or false (a native.Flag).
func strictBool(name string, raw []byte) (bool, error) {
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, invalidParams("%s must be a boolean", name)
}

// optionalBool is strictBool for a member that may be absent, which
// means absent.
func optionalBool(name string, raw []byte, absent bool) (bool, error) {
	if len(raw) == 0 {
		return absent, nil
	}
	return strictBool(name, raw)
}

// safeCount accepts a nonnegative safe integer (at most 2^53-1) written
// as a JSON integer (a native.Count).
func safeCount(name string, raw []byte) (int, error) {
	t := string(bytes.TrimSpace(raw))
	if t == "" {
		return 0, invalidParams("%s is required", name)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || t[0] == '"' {
		return 0, invalidParams("%s must be a number", name)
	}
	if f < 0 || f != math.Trunc(f) || f > 1<<53-1 {
		return 0, invalidParams("%s must be a nonnegative safe integer", name)
	}
	return int(f), nil
}
