// Package turn holds the agent loop's decisions about one model request,
// as functions of their inputs: the model input built from a copy of the
// history and the cached one before it (input.go), the request around it
// (request.go), its token counts (tokens.go), whether it fits the context
// window or a compaction would make it fit (fit.go), whether it fits the
// session's budgets (budget.go), and what a call adds to the usage ledger
// (usage.go).
//
// It knows nothing of sessions. The engine's Session keeps a State per
// session under its lock, copies what a build needs under that lock, calls
// into this package without it, and applies the Update it gets back under
// the lock again (docs/lock-order.md): nothing here takes a lock but the
// tokenizer's first load.
package turn
