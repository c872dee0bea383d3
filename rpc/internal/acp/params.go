package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/loopdev/loop/rpc/internal/textcheck"
)

// decodeParams unmarshals params into v (dispatch.Decode) in ACP's words.
func decodeParams(raw *json.RawMessage, v any) error {
	return dispatch.Decode(raw, v, acpWording{})
}

// acpWording words refused params as docs/acp.md does.
type acpWording struct{}

func (acpWording) TypeError(te *json.UnmarshalTypeError) string {
	if te.Field == "" {
		return ""
	}
	return fmt.Sprintf("%s has the wrong type (%s)", te.Field, te.Value)
}

// UnicodeCode: inside a prompt block, an embedded resource is an attached
// file (promptInput), so its strings are invalid_text_files, and an
// image's data is invalid_images, as the engine's checks of those would
// say.
func (acpWording) UnicodeCode(iv *textcheck.Invalid) engine.Code {
	if iv.Top() == "prompt" && len(iv.Path) >= 3 {
		switch iv.Path[2] {
		case "resource":
			return engine.CodeInvalidTextFiles
		case "data":
			return engine.CodeInvalidImages
		}
	}
	return engine.CodeInvalidParams
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
