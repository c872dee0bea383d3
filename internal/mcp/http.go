package mcp

import (
	"net/http"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport returns the streamable HTTP transport for cfg; every request
// carries cfg.Headers (values with ${NAME} expanded from the environment).
func httpTransport(cfg ServerConfig) sdk.Transport {
	headers := make(http.Header, len(cfg.Headers))
	for k, v := range cfg.ExpandedHeaders(os.Getenv) {
		headers.Set(k, v)
	}
	return &sdk.StreamableClientTransport{
		Endpoint:   cfg.URL,
		HTTPClient: &http.Client{Transport: &headerTransport{base: http.DefaultTransport, headers: headers}},
	}
}

type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context()) // a RoundTripper must not modify the caller's request
		for k, vs := range t.headers {
			req.Header[k] = vs
		}
	}
	return t.base.RoundTrip(req)
}
