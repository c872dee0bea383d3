// Package sandbox runs commands under an OS sandbox: on Linux, a Landlock
// ruleset that limits where a process and everything it starts may write
// and read, and whether it may open TCP connections (docs/configuration.md,
// "The sandbox").
//
// The ruleset is applied in the child only. Start restricts one OS thread
// that Loop creates for the purpose, forks the command from it and lets the
// thread end: the command inherits the rules at fork, and no thread that
// runs Loop's own code is ever restricted, so the engine keeps its access to
// the data root. This costs a few system calls per command, where starting a
// helper process (re-executing the loop binary) would cost its whole start
// (docs/performance.md).
package sandbox
