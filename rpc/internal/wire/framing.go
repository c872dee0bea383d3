package wire

import (
	"fmt"
	"strings"
)

// Framing says how messages are delimited on the byte stream.
type Framing int

const (
	// Auto detects the framing from the first non-whitespace input bytes:
	// a Content-Length header means LSP, anything else NDJSON.
	Auto Framing = iota
	// LSP frames every message as "Content-Length: N\r\n\r\n" plus N bytes.
	LSP
	// NDJSON writes one compact JSON value per line.
	NDJSON
)

// String returns the name ParseFraming accepts.
func (f Framing) String() string {
	switch f {
	case Auto:
		return "auto"
	case LSP:
		return "lsp"
	case NDJSON:
		return "ndjson"
	}
	return fmt.Sprintf("Framing(%d)", int(f))
}

// ParseFraming parses "auto", "lsp" or "ndjson" (any case), as a
// --framing flag spells them.
func ParseFraming(s string) (Framing, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto", "":
		return Auto, nil
	case "lsp":
		return LSP, nil
	case "ndjson", "jsonl", "lines":
		return NDJSON, nil
	}
	return Auto, fmt.Errorf("unknown framing %q (want auto, lsp or ndjson)", s)
}
