package rpc

import "github.com/loopdev/loop/rpc/internal/wire"

// Framing is how frames are cut on stdin and written on stdout: detected
// from the first bytes (auto), LSP Content-Length headers, or NDJSON
// (docs/protocol.md 2.1).
type Framing = wire.Framing

// ParseFraming reads --framing's value: auto, lsp or ndjson.
func ParseFraming(s string) (Framing, error) { return wire.ParseFraming(s) }
