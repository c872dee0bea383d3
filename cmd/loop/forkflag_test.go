package main

import "testing"

func TestForkFlagSplitsSessionAndMessageCount(t *testing.T) {
	for _, c := range []struct {
		arg, name string
		count     int
		whole     bool
	}{
		{"01a2f000-0000-7000-8000-000000000000", "01a2f000-0000-7000-8000-000000000000", 0, true},
		{"01a2f000-0000-7000-8000-000000000000@4", "01a2f000-0000-7000-8000-000000000000", 4, false},
		{"01a2f000-0000-7000-8000-000000000000@0", "01a2f000-0000-7000-8000-000000000000", 0, false},
		{"/data/me@work/sessions/x", "/data/me@work/sessions/x", 0, true},
		{"/data/x@+3", "/data/x@+3", 0, true},
		{"@3", "@3", 0, true},
	} {
		name, count, whole := splitForkArg(c.arg)
		if name != c.name || count != c.count || whole != c.whole {
			t.Errorf("%q: %q %d %v, want %q %d %v", c.arg, name, count, whole, c.name, c.count, c.whole)
		}
	}
}
