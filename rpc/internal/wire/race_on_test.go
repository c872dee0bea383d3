//go:build race

package wire

// The race detector slows encoding/json about tenfold; the full 10 MiB runs
// without it.
const raceEnabled = true
