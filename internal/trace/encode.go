package trace

import (
	"slices"
	"strconv"
)

// A model call makes four records besides its events (call, request,
// response, result), and a prompt one, whose members are strings,
// numbers, the usage and the prompt's text:
// encoding/json's reflection over Record's forty fields cost them about
// as much as the call's events (docs/performance.md, "Traces"). appendFlat
// writes such a record by hand, exactly as jsonenc.Marshal would (the
// members in Record's order, the empty ones left out:
// TestFlatRecordsEncodeAsJSONEncDoes); a record with a member it does not
// write goes through jsonenc.

// flat reports whether appendFlat writes r whole.
func flat(r *Record) bool {
	return (r.Input == nil || r.Input.Images == nil && r.Input.Files == nil) && r.Logical == nil && r.Body == nil && r.BodyPatch == nil && r.Content == nil &&
		r.Arguments == nil && r.Result == nil && r.Events == nil && r.Config == nil
}

// appendFlat appends r as one JSON object (no newline); flat(r) must hold.
func appendFlat(out []byte, r *Record) []byte {
	out = append(out, `{"type":`...)
	out = appendJSONString(out, []byte(r.Type))
	out = append(out, `,"t":`...)
	out = strconv.AppendInt(out, r.T, 10)
	num := func(name string, v int64) {
		if v != 0 {
			out = append(out, ',', '"')
			out = append(out, name...)
			out = append(out, '"', ':')
			out = strconv.AppendInt(out, v, 10)
		}
	}
	str := func(name, v string) {
		if v != "" {
			out = append(out, ',', '"')
			out = append(out, name...)
			out = append(out, '"', ':')
			out = appendJSONString(out, []byte(v))
		}
	}
	boolean := func(name string, v bool) {
		if v {
			out = append(out, ',', '"')
			out = append(out, name...)
			out = append(out, `":true`...)
		}
	}
	num("version", int64(r.Version))
	str("sessionId", r.SessionID)
	str("workspaceId", r.WorkspaceID)
	str("cwd", r.Cwd)
	num("segment", int64(r.Segment))
	str("runId", r.RunID)
	str("requestId", r.RequestID)
	if in := r.Input; in != nil {
		// A prompt's: its text and skills (images and files go through
		// jsonenc).
		out = append(out, `,"input":{"text":`...)
		out = appendJSONString(out, []byte(in.Text))
		if len(in.Skills) > 0 {
			out = append(out, `,"skills":[`...)
			for i, sk := range in.Skills {
				if i > 0 {
					out = append(out, ',')
				}
				out = appendJSONString(out, []byte(sk))
			}
			out = append(out, ']')
		}
		out = append(out, '}')
	}
	num("call", int64(r.Call))
	num("attempt", int64(r.Attempt))
	str("purpose", r.Purpose)
	str("provider", r.Provider)
	str("api", r.API)
	str("model", r.Model)
	str("effort", r.Effort)
	str("permission", r.Permission)
	str("method", r.Method)
	str("url", r.URL)
	if len(r.Headers) > 0 {
		out = append(out, `,"headers":{`...)
		keys := make([]string, 0, len(r.Headers))
		for k := range r.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys) // as encoding/json orders a map
		for i, k := range keys {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendJSONString(out, []byte(k))
			out = append(out, ':')
			out = appendJSONString(out, []byte(r.Headers[k]))
		}
		out = append(out, '}')
	}
	str("bodyText", r.BodyText)
	num("status", int64(r.Status))
	str("raw", r.Raw)
	str("error", r.Error)
	boolean("retryable", r.Retryable)
	num("durationMs", r.DurationMs)
	num("attempts", int64(r.Attempts))
	str("stopReason", r.StopReason)
	if u := r.Usage; u != nil {
		out = append(out, `,"usage":{"input":`...)
		out = strconv.AppendInt(out, int64(u.Input), 10)
		out = append(out, `,"output":`...)
		out = strconv.AppendInt(out, int64(u.Output), 10)
		out = append(out, `,"cacheRead":`...)
		out = strconv.AppendInt(out, int64(u.CacheRead), 10)
		out = append(out, `,"cacheWrite":`...)
		out = strconv.AppendInt(out, int64(u.CacheWrite), 10)
		out = append(out, `,"totalTokens":`...)
		out = strconv.AppendInt(out, int64(u.TotalTokens), 10)
		out = append(out, '}')
	}
	str("toolCallId", r.ToolCallID)
	str("name", r.Name)
	num("resultBytes", int64(r.ResultBytes))
	boolean("isError", r.IsError)
	str("outcome", r.Outcome)
	str("step", r.Step)
	str("reason", r.Reason)
	return append(out, '}')
}
