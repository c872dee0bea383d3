package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkRuleset is the work the sandbox adds before a command starts:
// the plan of the policy (with the real home's key stores denied) and the
// ruleset built from it. Process start-up is not in it, so it is steadier
// than BenchmarkStart on a loaded machine (docs/performance.md).
func BenchmarkRuleset(b *testing.B) {
	st := Probe()
	if !st.Available {
		b.Skipf("SKIP: the OS sandbox is %s", st)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		b.Fatal(err)
	}
	p := Policy{
		Writable: []string{b.TempDir(), os.TempDir()},
		ReadOnly: []string{filepath.Join(home, ".local", "share", "loop")},
		Deny:     DefaultDeny(home),
	}
	for b.Loop() {
		cfg, rules, err := ruleset(p, st.ABI)
		if err != nil {
			b.Fatal(err)
		}
		fd, _, err := cfg.NewRulesetFD(rules...)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
}
