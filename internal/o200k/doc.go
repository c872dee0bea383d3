// Package o200k counts the tokens of a text in OpenAI's o200k_base
// byte-pair encoding, the one Loop estimates every provider's requests
// with (engine/internal/turn/tokens.go).
//
// It gives the counts of github.com/tiktoken-go/tokenizer's o200k_base
// codec, which the tests compare it with (o200k_test.go), at a quarter of
// the size in the binary: the vocabulary is embedded as its tokens' bytes
// in rank order (o200k.bin, 1.6 MB), not as a Go map literal (6 MB of
// string headers, ranks and bytes), and the map is built at the first
// count, never in a process that does not count. The pre-tokenizer is
// the encoding's split pattern written out as code (split.go), which
// needs no regular expression engine and no package initialisation.
// docs/performance.md has the measurements.
package o200k
