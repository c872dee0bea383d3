package trace

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// Redacted replaces a secret wherever it would appear.
const Redacted = "[REDACTED]"

// minSecret: shorter strings are not scrubbed from lines (a one-letter
// "key" would shred every line); such a key is still never sent as a
// header value the trace keeps, because credential headers are dropped.
const minSecret = 6

// secretHeader reports whether a header may carry a credential; such
// headers are left out of a trace entirely.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "cookie", "password", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// Headers returns h without credential headers, one value per name.
func Headers(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if secretHeader(k) {
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

// SecretsOfURL lists the credentials a URL may carry (user, password,
// query values), for Options.Secrets.
func SecretsOfURL(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	if u.User != nil {
		out = append(out, u.User.Username())
		if p, ok := u.User.Password(); ok {
			out = append(out, p)
		}
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return out
}

// SecretsOfHeaders lists the values of credential headers.
func SecretsOfHeaders(h map[string]string) []string {
	var out []string
	for k, v := range h {
		if secretHeader(k) {
			out = append(out, v)
			// "Bearer x": the token alone too.
			if _, tok, ok := strings.Cut(v, " "); ok {
				out = append(out, tok)
			}
		}
	}
	return out
}
