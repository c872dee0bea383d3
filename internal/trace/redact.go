package trace

import (
	"encoding/json"
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
// query values), for Options.Secrets: decoded, and as the URL spells them,
// since an error that echoes the URL repeats them percent-encoded.
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
		if at := strings.Index(raw, "@"+u.Host); at >= 0 {
			if i := strings.Index(raw, "//"); i >= 0 && i+2 <= at {
				user, pass, _ := strings.Cut(raw[i+2:at], ":")
				out = append(out, user, pass)
			}
		}
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	for _, kv := range strings.Split(u.RawQuery, "&") {
		if _, v, ok := strings.Cut(kv, "="); ok {
			out = append(out, v)
		}
	}
	return out
}

// SecretForms is s as trace lines may spell it: itself, JSON-escaped
// (request bodies and records are JSON, with or without <, > and &
// escaped) and percent-encoded (URLs in error messages). Scrubbing every
// form keeps a key with quotes, slashes or plus signs out of a trace.
func SecretForms(s string) []string {
	out := []string{s}
	add := func(f string) {
		for _, have := range out {
			if have == f {
				return
			}
		}
		out = append(out, f)
	}
	if b, err := json.Marshal(s); err == nil {
		add(string(b[1 : len(b)-1]))
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) == nil {
		e := strings.TrimSpace(b.String())
		add(e[1 : len(e)-1])
	}
	add(url.QueryEscape(s))
	add(url.PathEscape(s))
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
