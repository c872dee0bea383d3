// Package native holds the native dialect's wire types: the only structs
// with the JSON member names of docs/protocol.md, for what the server
// writes (results, the server's approval request, notifications) and what
// it reads (every method's params, a client's answer: params.go), the
// converters that build the written ones from the engine's values, and
// the protocol as data (methods.go: every method with its params and
// result types, every notification, every error code), which package rpc
// serves and a generator describes. The engine's types carry no JSON tags
// (a Go program gets Go values) and the store's disk records have their
// own, so renaming a Go field changes neither the protocol nor the disk
// format. The golden files in rpc/testdata/golden pin these types'
// encoding byte for byte, and a test checks that every member name is one
// docs/protocol.md documents.
package native
