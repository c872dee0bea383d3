package provider_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/provider/providertest"
	"github.com/loopdev/loop/internal/redact"
)

// Every secret the provider was given (Config.Secrets: what the
// configuration got from the environment) stays out of its errors, in
// whatever spelling an error repeats it: the URL of a refused connection
// with a key in its path (percent-encoded) and query (as written), and a
// provider's error body echoing a token with \u escapes, or a stream's
// error event echoing it. The cause is still there for errors.Is.
func TestErrorsHoldNoConfiguredSecretInAnySpelling(t *testing.T) {
	pathKey, queryKey, token := "gwpath-é😀-SECRETP", "gwkey-ключ+Ω/SECRETQ", "gwtok-ñΩ-SECRETT"
	secrets := redact.New(pathKey, queryKey, token, providertest.TestKey)
	check := func(what string, msg string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		texts := []string{err.Error(), msg}
		var perr *provider.Error
		if errors.As(err, &perr) && perr.Err != nil {
			texts = append(texts, perr.Err.Error())
		}
		for _, text := range texts {
			if strings.Contains(text, "SECRET") {
				t.Errorf("%s: %q holds a secret", what, text)
			}
		}
		if !strings.Contains(err.Error(), redact.Marker) {
			t.Errorf("%s: %q: nothing redacted", what, err)
		}
	}

	base := "http://" + closedAddr(t) + "/" + url.PathEscape(pathKey) + "/v1?key=" + queryKey
	cfg := provider.Config{API: provider.APIOpenAI, BaseURL: base, Headers: map[string]string{"X-Gw-Token": token}, Secrets: secrets, MaxAttempts: 1}
	msg, err := provider.NewOpenAI(cfg).Stream(context.Background(), hi, nil)
	check("refused", msg.ErrorMessage, err)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("%v is not a refused connection", err)
	}

	srv := providertest.NewServer(t, provider.APIOpenAI,
		providertest.Response{Status: 401, Body: `{"detail":"invalid token gwtok-\u00f1\u03A9-SECRETT, key test-key-0123456789"}`},
		providertest.SSE("data: {\"error\":{\"message\":\"bad token gwtok-\\u00F1\\u03a9-SECRETT\"}}\n\n"),
	)
	cfg = srv.Config()
	cfg.Secrets, cfg.MaxAttempts = secrets, 1
	msg, err = provider.NewOpenAI(cfg).Stream(context.Background(), hi, nil)
	check("echoed in an error body", msg.ErrorMessage, err)
	msg, err = provider.NewOpenAI(cfg).Stream(context.Background(), hi, nil)
	check("echoed in an error event", msg.ErrorMessage, err)
}
