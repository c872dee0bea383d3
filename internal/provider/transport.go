package provider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loopdev/loop/internal/redact"
)

// transport posts a request and hands the streamed response body to a
// reader, retrying failures that happen before any byte of the body
// arrived. Once output has streamed it never retries: the caller has
// already shown it.
type transport struct {
	client *http.Client
	// secrets are removed from every error before anyone sees it
	// (redacted): the key, and all the configuration holds.
	secrets  *redact.Set
	headers  map[string]string // the user's extra headers, applied last
	attempts int
	base     time.Duration
}

func newTransport(cfg Config) transport {
	t := transport{
		client:   cfg.HTTPClient,
		secrets:  cfg.Secrets,
		headers:  cfg.Headers,
		attempts: cfg.MaxAttempts,
		base:     cfg.RetryBaseDelay,
	}
	if t.client == nil {
		t.client = &http.Client{}
	}
	if t.secrets == nil {
		t.secrets = redact.New(slices.Concat([]string{cfg.APIKey}, redact.OfURL(cfg.BaseURL), redact.OfHeaders(cfg.Headers))...)
	}
	if t.attempts <= 0 {
		t.attempts = DefaultMaxAttempts
	}
	if t.base <= 0 {
		t.base = DefaultRetryBaseDelay
	}
	return t
}

// stream POSTs body to url. read gets the body of a 2xx response and must
// return nil only when it saw the stream's end marker. The error is an
// *Error, ctx.Err(), or what read returned. onRetry (Request.OnRetry; nil:
// none) hears of each retry before its wait.
func (t *transport) stream(ctx context.Context, url string, headers map[string]string, body Body, read func(io.Reader) error, onRetry func(Retry)) error {
	obs := ObserverFrom(ctx)
	for attempt := 1; ; attempt++ {
		delay := t.backoff(attempt)
		again, after, err := t.try(ctx, url, headers, body, read, attempt, obs)
		// Every failure of an attempt passes here on its way to the
		// observer (the trace) and the caller, who make text of it: the
		// one place its secrets are removed.
		err = t.redacted(err)
		observeEnd(obs, attempt, err)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !again || attempt >= t.attempts:
			return err
		}
		if after >= 0 {
			delay = after
		}
		if onRetry != nil {
			onRetry(Retry{Attempt: attempt + 1, Of: t.attempts, Delay: delay, Err: err})
		}
		if err := sleepCtx(ctx, delay); err != nil {
			return err
		}
	}
}

// try makes one attempt. again: the failure is worth another attempt;
// after: the delay the provider asked for (-1 when none).
func (t *transport) try(ctx context.Context, url string, headers map[string]string, body Body, read func(io.Reader) error, attempt int, obs Observer) (again bool, after time.Duration, err error) {
	resp, err := t.send(ctx, url, headers, body, attempt, obs)
	if err != nil {
		if ctx.Err() != nil {
			return false, -1, ctx.Err()
		}
		var perr *Error
		if !errors.As(err, &perr) {
			perr = &Error{Kind: KindNetwork, Message: err.Error(), Retryable: transientNetErr(err), Err: err}
		}
		return perr.Retryable, -1, perr
	}
	if obs != nil {
		obs.Response(attempt, resp.StatusCode)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		herr, after := httpError(resp)
		return herr.Retryable && after <= MaxRetryDelay, after, herr
	}
	counted := &countingReader{r: resp.Body, obs: obs, attempt: attempt}
	err = read(counted)
	resp.Body.Close()
	if err == nil {
		return false, -1, nil
	}
	// A body that broke before its first byte showed nothing to anyone:
	// that is as transient as a refused connection. So is a retryable
	// error event that came before any content.
	var perr *Error
	early := counted.n == 0 || (errors.As(err, &perr) && perr.Retryable && perr.beforeOutput)
	return early, -1, err
}

// redacted is err without t's secrets: a provider may echo the key in
// its message, a network error repeats the URL with what its path and
// query carry.
func (t *transport) redacted(err error) error {
	var perr *Error
	if !errors.As(err, &perr) {
		return t.secrets.Error(err)
	}
	perr.Message = t.secrets.Text(perr.Message)
	perr.Err = t.secrets.Error(perr.Err)
	return err
}

func (t *transport) send(ctx context.Context, url string, headers map[string]string, body Body, attempt int, obs Observer) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body.reader())
	if err != nil {
		return nil, &Error{Kind: KindNetwork, Message: "bad provider URL: " + err.Error(), Err: err}
	}
	// The length is known before the bytes are made (Body), so a long
	// body streams with its Content-Length as a short one is sent.
	req.ContentLength = int64(body.Len())
	req.GetBody = func() (io.ReadCloser, error) { return body.reader(), nil }
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if obs != nil {
		obs.Request(attempt, url, req.Header, body)
	}
	return t.client.Do(req)
}

func (t *transport) backoff(attempt int) time.Duration {
	d := t.base
	for i := 1; i < attempt && d < MaxRetryDelay; i++ {
		d *= 2
	}
	return min(d, MaxRetryDelay)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// transientNetErr reports whether a failure to get a response is worth
// another try: the server was not there yet, dropped the connection, or
// timed out. DNS "no such host" and TLS errors are not.
func transientNetErr(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTemporary || dns.IsTimeout
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryableStatus lists the statuses that mean "try again later":
// rate limits, server errors and Anthropic's 529 "overloaded".
func retryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
		return true
	}
	return false
}

// httpError reads an error response and returns it with the delay its
// Retry-After asks for (-1 when none).
func httpError(resp *http.Response) (*Error, time.Duration) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	msg := errorBodyMessage(body)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e := &Error{
		Kind:      KindHTTP,
		Status:    resp.StatusCode,
		Message:   msg,
		Retryable: retryableStatus(resp.StatusCode),
	}
	return e, retryAfter(resp.Header, time.Now())
}

// errorBodyMessage finds the message in an error body: {"error":{"message"}}
// (OpenAI, Anthropic), {"error":"..."} (Ollama) or {"message":"..."};
// otherwise the body's text, shortened.
func errorBodyMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		}
	}
	text := strings.TrimSpace(string(body))
	if len(text) > 300 {
		text = text[:300] + "…"
	}
	return text
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After in seconds or as
// an HTTP date; -1 when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return clampDelay(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return clampDelay(secs)
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0)
	}
	return -1
}

// clampDelay converts seconds to a delay without overflowing: anything
// beyond MaxRetryDelay (huge numbers, +Inf) is just "too long to wait".
func clampDelay(secs float64) time.Duration {
	if math.IsInf(secs, 0) || math.IsNaN(secs) || secs > MaxRetryDelay.Seconds() {
		return MaxRetryDelay + time.Second
	}
	return time.Duration(secs * float64(time.Second))
}

type countingReader struct {
	r       io.Reader
	n       int64
	obs     Observer
	attempt int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.obs != nil && n > 0 {
		c.obs.Body(c.attempt, p[:n])
	}
	return n, err
}

func observeEnd(obs Observer, attempt int, err error) {
	if obs != nil {
		obs.End(attempt, err)
	}
}
