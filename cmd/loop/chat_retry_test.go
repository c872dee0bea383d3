package main

import (
	"testing"
	"time"
)

func TestRetryNoticeSaysTheCauseTheWaitAndTheAttempt(t *testing.T) {
	for _, tc := range []struct {
		status int
		why    string
		delay  time.Duration
		want   string
	}{
		{500, "internal error", 2 * time.Second, "HTTP 500, retrying in 2 s, attempt 2 of 4"},
		{429, "", 1500 * time.Millisecond, "HTTP 429, retrying in 2 s, attempt 2 of 4"},
		{0, "connection refused\nmore", time.Second, "connection refused, retrying in 1 s, attempt 2 of 4"},
	} {
		if got := retryNotice(tc.status, tc.why, 2, 4, tc.delay); got != tc.want {
			t.Errorf("retryNotice(%d, %q) = %q, want %q", tc.status, tc.why, got, tc.want)
		}
	}
}
