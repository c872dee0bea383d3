package o200k

import (
	_ "embed"
	"sync"
)

// vocabBlob holds every token of o200k_base in rank order, each as one
// byte of length and then its bytes: rank 0 first, ranks are dense (the
// special tokens, which Count never produces, are left out). It is
// written by `go test ./internal/o200k -update` from tiktoken-go's
// codec, and TestTheVocabularyIsTiktokens checks it against it.
//
//go:embed o200k.bin
var vocabBlob string

// tokens is the number of ranks in vocabBlob.
const tokens = 199998

// ranks maps a token's bytes to its rank. The keys are substrings of
// vocabBlob: building it copies no token. It is built at the first count
// (tens of milliseconds, 7 MB): the server counts only a request that could
// exceed the model's context window (engine/internal/turn/fit.go).
var ranks = sync.OnceValue(loadRanks)

func loadRanks() map[string]uint32 {
	m := make(map[string]uint32, tokens)
	for i, rank := 0, uint32(0); i < len(vocabBlob); rank++ {
		n := int(vocabBlob[i])
		m[vocabBlob[i+1:i+1+n]] = rank
		i += 1 + n
	}
	return m
}
