// Package trace records what a session sent to its models and what came
// back: JSON lines under <dataRoot>/traces/<workspaceId>/<sessionId>/
// (traces/global/<sessionId>/ for independent chats), in segment files that
// rotate so that a session's trace stays within its size bound, oldest
// segment dropped first. docs/traces.md describes the layout and every
// record type; `loop replay` reads them back (Read).
//
// A Writer never blocks its caller on I/O: records are encoded on the
// caller's goroutine, appended to an in-memory buffer under a short lock,
// and written by a flusher goroutine. A write error is reported once and
// marks the trace incomplete; the session it traces is unaffected.
package trace
