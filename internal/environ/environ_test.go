package environ

import (
	"slices"
	"testing"
)

func TestWithoutDropsOnlyTheNamedVariables(t *testing.T) {
	env := []string{"PATH=/bin", "OPENAI_API_KEY=sk-1", "OPENAI_API_KEY_FILE=x", "MY_KEY=a=b", "=C:=C:\\", "X_MY_KEY=1"}
	got := Without(env, []string{"OPENAI_API_KEY", "MY_KEY"})
	want := []string{"PATH=/bin", "OPENAI_API_KEY_FILE=x", "=C:=C:\\", "X_MY_KEY=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("Without = %q, want %q", got, want)
	}
	if env[1] != "OPENAI_API_KEY=sk-1" {
		t.Fatal("input modified")
	}
}
