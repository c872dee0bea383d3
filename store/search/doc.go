// Package search is the full-text search index of a data root's sessions
// (docs/storage.md, "Search index"; docs/protocol.md, session/search).
//
// The index is derived data, kept beside the store's commits rather than
// inside them: an Index is a store.Observer of its Root (New adds it), told
// of each commit and metadata save once it is durable, and it appends what
// they add to sessions/<scope>/.search/. A failed or lost append never
// touches a commit; a search finds what the index lacks by comparing it
// with the committed headers and logs, and rebuilds or catches it up.
package search
