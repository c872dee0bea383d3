// Package convo is the vocabulary of a conversation with a model: its
// messages, their content blocks, roles and stop reasons, and the token
// accounting of model calls. It is a leaf: the store, the engine, the
// providers and the SDK share these types, and it imports none of them.
// How a message is kept on disk, sent on the wire or recorded in a trace
// belongs to those packages (docs/storage.md, docs/protocol.md).
package convo
