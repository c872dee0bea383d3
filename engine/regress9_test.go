package engine_test

import (
	"context"
	"testing"
)

func TestRegressionRuntimeNewSessionIndependentCwd(t *testing.T) {
	h := newHarness(t, `{"turns":[]}`)
	first, err := h.e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	rt := h.e.NewRuntime(first)
	if _, err := rt.NewSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rt.Session().Cwd(); got != first.Cwd() {
		t.Errorf("newSession did not keep cwd: %s -> %s", first.Cwd(), got)
	}
}
