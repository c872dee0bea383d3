package engine

import "testing"

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"HOST": "127.0.0.1", "PORT": "8080", "KEY": "k"}
	get := func(k string) string { return env[k] }
	for in, want := range map[string]string{
		"http://$HOST:${PORT}/v1": "http://127.0.0.1:8080/v1",
		"Bearer ${KEY}":           "Bearer k",
		"cost: $$5":               "cost: $5",
		"a $ b":                   "a $ b",
		"${not closed":            "${not closed",
		"$5":                      "$5",
		"${1X}":                   "${1X}",
		"$MISSING/x":              "/x",
		"end$":                    "end$",
	} {
		if got := expandEnv(in, get); got != want {
			t.Errorf("expandEnv(%q) = %q, want %q", in, got, want)
		}
	}
}
