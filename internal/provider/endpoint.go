package provider

import "strings"

// endpoint is base with path appended to its path: a query (Azure OpenAI's
// api-version, a gateway's key) and a fragment stay after the whole path,
// where a server reads them. trimV1 drops a trailing /v1 of base's path
// before path is appended (path then starts with it).
func endpoint(base, path string, trimV1 bool) string {
	rest := ""
	if i := strings.IndexAny(base, "?#"); i >= 0 {
		base, rest = base[:i], base[i:]
	}
	base = strings.TrimRight(base, "/")
	if trimV1 {
		base = strings.TrimSuffix(base, "/v1")
	}
	return base + path + rest
}
