//go:build race

package main

// The race detector slows the binary several times over, which widens the
// windows repeated tests look for: they need fewer starts under it.
const raceEnabled = true
