//go:build race

package jsonenc_test

// The race detector's instrumentation moves values to the heap that a
// plain build keeps on the stack, so allocation bounds are checked in the
// plain run of make test only.
const raceEnabled = true
