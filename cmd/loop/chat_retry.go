package main

import (
	"fmt"
	"math"
	"time"
)

// retryNotice is what the chat shows beside its spinner while a model
// request waits to be sent again (tui.Notice): "HTTP 500, retrying in
// 2 s, attempt 2 of 4". why is the failure when the attempt got no HTTP
// status (status 0): a refused connection, a stream cut before its first
// byte. The engine's retry event feeds it: in onEvent,
//
//	case *engine.RetryEvent:
//		c.ui.Send(tui.Notice{Text: retryNotice(p.Status, p.Message, p.Attempt, p.Of, p.Delay)})
func retryNotice(status int, why string, attempt, of int, delay time.Duration) string {
	cause := fmt.Sprintf("HTTP %d", status)
	if status == 0 {
		cause = firstLine(why, 60)
		if cause == "" {
			cause = "the request failed"
		}
	}
	secs := int(math.Ceil(delay.Seconds()))
	return fmt.Sprintf("%s, retrying in %d s, attempt %d of %d", cause, secs, attempt, of)
}
