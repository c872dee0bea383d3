//go:build unix && !linux

package tools

// groupAlive reports whether group pgid has any process left; unreaped
// zombies count too, which only costs waiting out the kill grace.
func groupAlive(pgid int) bool { return killProbe(pgid) }
