package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// A record logged through Handler holds no secret: not in its message,
// nor in a string, an error, a value that prints one, a group or an
// attribute added with With; the secrets are those of the moment.
func TestHandlerRemovesSecretsFromEveryPartOfARecord(t *testing.T) {
	const key = "sk-log-secret-223344"
	var buf bytes.Buffer
	var set *Set
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil), func() *Set { return set }))
	log.Info("before " + key)
	if !strings.Contains(buf.String(), key) {
		t.Fatalf("no secrets yet, yet the record changed: %s", buf.String())
	}
	buf.Reset()
	set = New(key)
	log.With("with", key).WithGroup("g").Error("failed for "+key,
		"s", key,
		"err", fmt.Errorf("Post %q: refused", "http://h/v1?key="+key),
		"any", []string{key},
		"n", 3,
		slog.Group("inner", "s", `"`+key+`"`))
	out := buf.String()
	if strings.Contains(out, "log-secret") {
		t.Errorf("the record holds the key: %s", out)
	}
	if strings.Count(out, Marker) != 6 || !strings.Contains(out, "g.n=3") {
		t.Errorf("record %s", out)
	}
}

func TestHandlerKeepsWhatHoldsNoSecret(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil), func() *Set { return New("sk-other-secret") }))
	log.Warn("plain", "err", errors.New("disk full"), "n", 2, "ok", true, "list", []int{1, 2})
	if got := buf.String(); !strings.Contains(got, `"msg":"plain","err":"disk full","n":2,"ok":true,"list":[1,2]`) {
		t.Errorf("record %s", got)
	}
}
