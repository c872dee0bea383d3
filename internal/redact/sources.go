package redact

import (
	"net/url"
	"strings"
)

// CredentialHeader reports whether a header may carry a credential by its
// name: one whose name holds auth, key, token, secret, cookie, password or
// signature, in any case.
func CredentialHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "cookie", "password", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// OfURL lists the credentials a URL may carry (user, password, query
// values): decoded, and as the URL spells them.
func OfURL(raw string) []string {
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

// OfHeaders lists the values of credential headers (CredentialHeader),
// and of "Bearer x" the token alone too.
func OfHeaders(h map[string]string) []string {
	var out []string
	for k, v := range h {
		if CredentialHeader(k) {
			out = append(out, v)
			if _, tok, ok := strings.Cut(v, " "); ok {
				out = append(out, tok)
			}
		}
	}
	return out
}
