//go:build race

package redact

// The race detector slows the property tests' single goroutine some ten
// times and finds nothing more in them: they try fewer lines under it.
const raceEnabled = true
