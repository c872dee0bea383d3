package mcp

import (
	"encoding/json"
	"testing"
)

// A stdio server does not inherit the hidden variables (provider keys)
// unless its config's env sets them.
func TestStdioServersDoNotInheritHiddenVariables(t *testing.T) {
	t.Setenv("MCPTEST_VALUE", "sk-inherited")
	m := newTestManager(t, map[string]ServerConfig{
		"plain":    {Command: serverBinary(t)},
		"explicit": {Command: serverBinary(t), Env: map[string]string{"MCPTEST_VALUE": "${MCPTEST_VALUE}"}},
	}, t.TempDir())
	m.HideEnv([]string{"MCPTEST_VALUE"})
	startReady(t, m)
	for server, want := range map[string]string{"plain": "", "explicit": "sk-inherited"} {
		var info struct {
			Value string `json:"value"`
		}
		if err := json.Unmarshal([]byte(mustCall(t, m, "mcp__"+server+"__info", `{}`).Text()), &info); err != nil {
			t.Fatal(err)
		}
		if info.Value != want {
			t.Errorf("%s: MCPTEST_VALUE = %q, want %q", server, info.Value, want)
		}
	}
}
