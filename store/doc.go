// Package store is Loop's on-disk format: the data root and its workspace
// registry, session directories (header.json, messages.jsonl, index.bin,
// runtime.jsonl, timings.jsonl), the commit protocol that keeps committed history through
// kill -9 and failing disks, listing, locks between processes, and the
// migration of legacy (pi) session files. It knows nothing of models,
// tools or protocols; package engine builds sessions on it.
//
// docs/storage.md is the format's contract, exact enough to write a reader
// in another language; a Go program may read Loop's sessions with this
// package directly.
//
// Every write of a session goes through its write queue; reads never wait
// for a write's disk I/O. A commit appends messages, fsyncs them, then
// atomically publishes the header that names the new committed range: until
// that rename, readers and the next process see the previous range.
// Derived data (the summary index behind a list page, in
// store/internal/summary, the search index of package store/search) is
// kept by the Root's observers, which each write
// feeds around and after its publish (Observer); none of them can fail it.
package store
