//go:build !race

package jsonenc_test

const raceEnabled = false
