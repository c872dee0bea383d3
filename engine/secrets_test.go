package engine

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The engine's log, and a log a front end passes through RedactLog, hold
// none of the configuration's secrets: every value baseUrl and header
// values got from the environment and the apiKeyEnv key, as configured
// now (a reload's new key included).
func TestTheLogHoldsNoConfiguredSecret(t *testing.T) {
	root := t.TempDir()
	env := map[string]string{"GW_KEY": "gwkey-ключ-SECRET1", "GW_TOKEN": "gwtok-SECRET2", "MY_KEY": "sk-apikey-SECRET3"}
	config := `{"providers":{"gw":{"api":"openai","baseUrl":"http://127.0.0.1:9/v1?key=${GW_KEY}","apiKeyEnv":"MY_KEY",` +
		`"headers":{"X-Team-Token":"${GW_TOKEN}"},"models":[{"id":"m"}]}}}`
	if err := os.WriteFile(filepath.Join(root, "config.json"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	e, err := New(Options{DataRoot: root, Getenv: func(k string) string { return env[k] }, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background(), Abort) })
	var front syncBuffer
	frontLog := e.RedactLog(slog.New(slog.NewTextHandler(&front, nil)))
	leak := errors.New(`Post "http://127.0.0.1:9/v1?key=gwkey-ключ-SECRET1": token gwtok-SECRET2, key sk-apikey-SECRET3`)
	e.log.Error("model call failed", "err", leak)
	frontLog.Error("reply not sent", "err", leak)

	env["MY_KEY"] = "sk-reloaded-SECRET4"
	if err := e.ReloadConfig(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.log.Error("after the reload", "err", "key sk-reloaded-SECRET4")
	for _, out := range []string{logs.String(), front.String()} {
		if strings.Contains(out, "SECRET") || !strings.Contains(out, "[REDACTED]") {
			t.Errorf("log:\n%s", out)
		}
	}
}
