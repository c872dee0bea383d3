package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
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
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalidParams("%s has the wrong type (%s)", te.Field, te.Value)
		}
		return invalidParams("params: %v", err)
	}
	return nil
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
