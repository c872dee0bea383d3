// Package wire is Loop's JSON-RPC transport: a jsonrpc2.ObjectStream that
// detects LSP (Content-Length) or NDJSON framing, answers malformed input with
// JSON-RPC errors instead of dropping the connection, never blocks a writer on
// a slow reader, and answers every request it read before it reports EOF.
//
// sourcegraph/jsonrpc2 closes the connection on the first protocol error and
// loses in-flight replies at EOF (docs/testing.md and the tests in this package show both); Stream absorbs both
// problems below the library, so ReadObject only ever hands it well-formed
// messages and only reports EOF once the server has drained.
package wire
