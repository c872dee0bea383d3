package main

import "testing"

// The line naming a waiting recovery file gives a command to paste: a
// path with spaces or quotes stays one word for the shell.
func TestRecoveryNoteCommandIsOneShellWordPerArgument(t *testing.T) {
	for in, want := range map[string]string{
		"/home/me/.local/share/loop/sessions/global/loop-recovery-x-1.json": "/home/me/.local/share/loop/sessions/global/loop-recovery-x-1.json",
		"/tmp/my data/loop-recovery-x-1.json":                               "'/tmp/my data/loop-recovery-x-1.json'",
		"/tmp/it's/f.json":                                                  `'/tmp/it'\''s/f.json'`,
		"":                                                                  "''",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
