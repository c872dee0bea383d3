package trace

import (
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/loopdev/loop/internal/redact"
)

// Redacted replaces a secret wherever it would appear.
const Redacted = redact.Marker

// Headers returns h without credential headers, one value per name.
func Headers(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if redact.CredentialHeader(k) {
			continue
		}
		out[k] = strings.Join(h[k], ", ")
	}
	return out
}

// URL returns u without user information and with every query value
// replaced: a base URL may carry a key either way.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Redacted
	}
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{Redacted}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
