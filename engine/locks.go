package engine

// Lock order (docs/lock-order.md has every lock of engine, rpc and store,
// with what each guards).
//
// Locks guard memory, not work: copy under the lock, then tokenize, read
// files, encode or call a model after letting go. Session.mu is never held
// across any of that; the store's write queue (store.Session.wmu) is held
// across a session's disk writes, and nothing waits for it but writers.
//
// A lock on the left may be held while one on its right is taken:
//
//	event sequence lock of a session (emit.go) -> Session.mu, subscribers' locks
//	Runtime.mu -> Session.mu
//	Session.mu -> Engine.mu, store.Session.mu, mcp.Manager.mu
//	Engine.mu  -> mcp.Manager.mu
//	preferences.writeMu -> preferences.mu
//
// Nothing emits while holding Session.mu, and Engine.mu is never held
// while a session's lock is taken. History messages never change once
// appended and the history only grows, so a slice of it copied under
// Session.mu may be read after the lock is released (historyView).
