package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/textcheck"
)

// decodeParams unmarshals params into v; missing params decode as {} so
// each method's own checks name the missing field.
func decodeParams(raw *json.RawMessage, v any) error {
	data := []byte("{}")
	if raw != nil && !bytes.Equal(bytes.TrimSpace(*raw), []byte("null")) {
		data = *raw
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return invalidParams("params must be an object")
	}
	// Before decoding: encoding/json would turn such strings into U+FFFD.
	if iv := textcheck.Find(data); iv != nil {
		return invalidUnicode(iv)
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalidParams("%s has the wrong type (%s)", te.Field, te.Value)
		}
		return invalidParams("params: %v", err)
	}
	return nil
}

// invalidUnicode refuses params with a string that is not valid Unicode.
// Inside a prompt block, an embedded resource is an attached file
// (promptInput), so its strings are invalid_text_files, and an image's
// data is invalid_images, as the engine's checks of those would say.
func invalidUnicode(iv *textcheck.Invalid) error {
	code := engine.CodeInvalidParams
	if iv.Top() == "prompt" && len(iv.Path) >= 3 {
		switch iv.Path[2] {
		case "resource":
			code = engine.CodeInvalidTextFiles
		case "data":
			code = engine.CodeInvalidImages
		}
	}
	return &engine.Error{Code: code, Message: iv.Error()}
}

func required(name, v string) error {
	if v == "" {
		return invalidParams("%s is required", name)
	}
	return nil
}

// absolute checks an ACP path parameter, which the protocol requires to be
// absolute.
func absolute(name, p string) error {
	if err := required(name, p); err != nil {
		return err
	}
	if !filepath.IsAbs(p) {
		return invalidParams("%s must be an absolute path, got %q", name, p)
	}
	return nil
}
