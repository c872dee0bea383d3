// Package native holds the native dialect's wire types: the only structs
// with the JSON member names of docs/protocol.md, for results, the server's
// approval request and notifications, and the converters that build them
// from the engine's values. The engine's types carry no JSON tags (a Go
// program gets Go values) and the store's disk records have their own, so
// renaming a Go field changes neither the protocol nor the disk format.
// The golden files in rpc/testdata/golden pin these types' encoding byte for
// byte, and a test checks that every member name is one docs/protocol.md
// documents.
package native
