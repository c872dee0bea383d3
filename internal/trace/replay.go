package trace

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/loopdev/loop/internal/provider"
)

// RecordedCall is one model call of a trace with its HTTP attempts.
type RecordedCall struct {
	Call     Record
	Ordinal  int // its place among the calls of its purpose, from 1
	Attempts []*RecordedAttempt
	Result   *Record
	// Tools are the tool executions its reply asked for, in the order
	// they ran (a main or resume call's).
	Tools []Record
}

// RecordedAttempt is one HTTP attempt: what was sent and what came back.
// Request's body may be a patch (Record.BodyPatch); Replayer.Body has the
// body itself.
type RecordedAttempt struct {
	Request   Record
	Status    int
	Events    []string
	Error     string
	Retryable bool
	index     int // of Request in the trace's records
}

// Replayer answers a replayed session's model requests from a trace (it
// is the http.RoundTripper of the replay's providers) and finds the first
// request that differs from the recorded one. Calls are matched by purpose
// and order within their purpose, so that background titles may
// interleave with the main turns differently than they did.
type Replayer struct {
	// Steps are the trace's prompt, resume, compact and title records in
	// order.
	Steps []Record
	// Configs are, for each step, the configuration its requests were
	// made with: the last config record before it (config.json's members
	// that shape requests), nil in a trace that records none (versions 1
	// and 2).
	Configs []json.RawMessage
	// Normalize, when set, rewrites a replayed body before it is compared
	// with the recorded one (the scratch workspace's path, today's date).
	Normalize func(body []byte, rec *RecordedCall) []byte

	calls  map[string][]*RecordedCall
	all    []*RecordedCall
	bodies *Bodies

	mu   sync.Mutex
	next map[string]int
	live map[*Call]*liveCall
	div  *Divergence
	made int
	// reply is the recorded call whose answer the replay got last among
	// those that ask for tools, and used how many of its tool executions
	// went to the replay's calls.
	reply *RecordedCall
	used  []bool
}

type liveCall struct {
	rec     *RecordedCall
	attempt int
}

// NewReplayer indexes t. It refuses a trace that lost its beginning or
// records between others, or records no HTTP model calls it could answer.
func NewReplayer(t *Trace) (*Replayer, error) {
	if t.Truncated {
		return nil, fmt.Errorf("the trace lost its oldest segments to its size bound (it starts at segment %d): it cannot be replayed from the first prompt", t.Segments[0])
	}
	if t.Lost != "" {
		// A lost call shifts every later answer and a lost event changes
		// one: the verdict would name the loss as a divergence. A trace
		// cut short at its end (the process died) still replays.
		return nil, fmt.Errorf("the trace is incomplete: it lost records when it was written (%s): it cannot be replayed faithfully", t.Lost)
	}
	if t.Unfinished != "" {
		// The same loss, where the writer could not say so: the step's
		// last records never reached the disk, or it never ended.
		return nil, fmt.Errorf("the trace is incomplete: %s (the process ended before the step did, or before its last records reached the disk): it cannot be replayed faithfully", t.Unfinished)
	}
	r := &Replayer{calls: map[string][]*RecordedCall{}, next: map[string]int{}, live: map[*Call]*liveCall{}}
	byNum := map[int]*RecordedCall{}
	// A tool execution belongs to the reply that asked for it: the last
	// main or resume call of its run. Tool call ids are the provider's,
	// and many providers start again from call_1 in every reply.
	replies := map[string]*RecordedCall{}
	var lastReply *RecordedCall
	var config json.RawMessage
	// Every body must rebuild, or the replay would fail halfway: they are
	// rebuilt once here and again, one at a time, as the replay compares
	// them (holding them all would take the sum of a session's bodies).
	check := t.Bodies()
	for i, rec := range t.Records {
		switch rec.Type {
		case TypeConfig:
			config = rec.Config
		case TypePrompt, TypeResume, TypeCompact, TypeTitle:
			r.Steps = append(r.Steps, rec)
			r.Configs = append(r.Configs, config)
		case TypeCall:
			if !provider.Replayable(rec.API) {
				return nil, fmt.Errorf("call %d used provider %q (api %q): only calls over HTTP (api %s) can be replayed",
					rec.Call, rec.Provider, rec.API, provider.JoinOr(provider.APINames(func(a provider.API) bool { return a.Replayable })))
			}
			c := &RecordedCall{Call: rec}
			r.calls[rec.Purpose] = append(r.calls[rec.Purpose], c)
			c.Ordinal = len(r.calls[rec.Purpose])
			r.all = append(r.all, c)
			byNum[rec.Call] = c
			if asksForTools(rec.Purpose) {
				replies[rec.RunID], lastReply = c, c
			}
		case TypeRequest:
			if _, err := check.Of(i); err != nil {
				return nil, fmt.Errorf("the trace cannot be replayed: %w", err)
			}
			if c := byNum[rec.Call]; c != nil {
				c.Attempts = append(c.Attempts, &RecordedAttempt{Request: rec, index: i})
			}
		case TypeResponse, TypeEvent, TypeError:
			a := attemptOf(byNum[rec.Call], rec.Attempt)
			if a == nil {
				continue
			}
			switch rec.Type {
			case TypeResponse:
				a.Status = rec.Status
			case TypeEvent:
				a.Events = append(a.Events, rec.Raw)
			case TypeError:
				a.Error, a.Retryable = rec.Error, rec.Retryable
			}
		case TypeResult:
			if c := byNum[rec.Call]; c != nil {
				rr := rec
				c.Result = &rr
			}
		case TypeTool:
			if c := cmp.Or(replies[rec.RunID], lastReply); c != nil {
				c.Tools = append(c.Tools, rec)
			}
		}
	}
	if len(r.Steps) == 0 {
		return nil, fmt.Errorf("the trace records no prompt to replay")
	}
	r.bodies = t.Bodies()
	return r, nil
}

func attemptOf(c *RecordedCall, n int) *RecordedAttempt {
	if c == nil {
		return nil
	}
	for _, a := range c.Attempts {
		if a.Request.Attempt == n {
			return a
		}
	}
	return nil
}

// Calls are the recorded calls in the order they started.
func (r *Replayer) Calls() []*RecordedCall { return r.all }

// asksForTools: calls of these purposes are a run's turns, whose replies
// call tools (titles and summaries do not).
func asksForTools(purpose string) bool { return purpose == PurposeMain || purpose == PurposeResume }

// Tool returns the recorded execution of a tool call of the reply the
// replay got last: the first of that reply's executions with this id not
// yet returned. Ids are matched within the reply only, by their order,
// since providers repeat them across replies.
func (r *Replayer) Tool(toolCallID string) (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reply == nil {
		return Record{}, false
	}
	for i, rec := range r.reply.Tools {
		if !r.used[i] && rec.ToolCallID == toolCallID {
			r.used[i] = true
			return rec, true
		}
	}
	return Record{}, false
}

// Divergence is the first difference found, or nil.
func (r *Replayer) Divergence() *Divergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.div
}

// Made counts the requests the replay sent that matched.
func (r *Replayer) Made() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.made
}

// Finish checks, once the replay is over, that every recorded call was
// made again; the first one that was not is the divergence.
func (r *Replayer) Finish() *Divergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.div != nil {
		return r.div
	}
	for _, c := range r.all {
		if c.Ordinal > r.next[c.Call.Purpose] {
			r.div = &Divergence{Call: c, Purpose: c.Call.Purpose, Ordinal: c.Ordinal, Attempt: 1, Reason: "the replay never made this request"}
			if len(c.Attempts) > 0 {
				r.div.Recorded = r.body(c.Attempts[0])
			}
			return r.div
		}
	}
	return nil
}

// RoundTrip answers one attempt from the trace, or refuses it when its body
// differs from the recorded one.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("replay: read request: %w", err)
	}
	call, _ := provider.ObserverFrom(req.Context()).(*Call)
	if call == nil {
		return refuse(req, "replay: a model request outside a traced call")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.div != nil {
		return refuse(req, "replay: already diverged")
	}
	lc := r.live[call]
	if lc == nil {
		purpose := call.Purpose()
		n := r.next[purpose] + 1
		r.next[purpose] = n
		lc = &liveCall{}
		if list := r.calls[purpose]; n <= len(list) {
			lc.rec = list[n-1]
		}
		r.live[call] = lc
		if lc.rec == nil {
			r.div = &Divergence{Purpose: purpose, Ordinal: n, Attempt: 1, Replayed: body, Reason: "the trace has no such request: the replay made more " + purpose + " calls than were recorded"}
			return refuse(req, r.div.Reason)
		}
	}
	lc.attempt++
	rec := lc.rec
	if lc.attempt > len(rec.Attempts) {
		r.div = &Divergence{Call: rec, Purpose: rec.Call.Purpose, Ordinal: rec.Ordinal, Attempt: lc.attempt, Replayed: body, Reason: "the replay sent more attempts than were recorded"}
		return refuse(req, r.div.Reason)
	}
	a := rec.Attempts[lc.attempt-1]
	cmp := body
	if r.Normalize != nil {
		cmp = r.Normalize(body, rec)
	}
	// The body is compared, not the URL: the replay may run where the
	// recorded endpoint means nothing.
	if recorded := r.body(a); !bytes.Equal(cmp, recorded) {
		r.div = &Divergence{Call: rec, Purpose: rec.Call.Purpose, Ordinal: rec.Ordinal, Attempt: lc.attempt, Recorded: recorded, Replayed: cmp, Reason: "the request differs from the recorded one"}
		return refuse(req, r.div.Reason)
	}
	if lc.attempt == 1 {
		r.made++
	}
	if asksForTools(rec.Call.Purpose) && r.reply != rec {
		r.reply, r.used = rec, make([]bool, len(rec.Tools))
	}
	if a.Status == 0 {
		// The recorded attempt got no response at all.
		if a.Retryable {
			return nil, fmt.Errorf("replayed failure: %s: %w", a.Error, io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("replayed failure: %s", a.Error)
	}
	resp := &http.Response{StatusCode: a.Status, Status: http.StatusText(a.Status), Header: http.Header{}, Request: req,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
	if a.Status < 200 || a.Status > 299 {
		msg, _ := json.Marshal(map[string]any{"error": map[string]string{"message": a.Error}})
		resp.Header.Set("Content-Type", "application/json")
		// Recorded waits are not waited again.
		resp.Header.Set("Retry-After-Ms", "0")
		resp.Body = io.NopCloser(bytes.NewReader(msg))
		return resp, nil
	}
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.Body = io.NopCloser(strings.NewReader(strings.Join(a.Events, "")))
	return resp, nil
}

// body is the recorded body of a (r.mu held): NewReplayer checked that
// every one rebuilds.
func (r *Replayer) body(a *RecordedAttempt) []byte {
	b, _ := r.bodies.Of(a.index)
	return b
}

func refuse(req *http.Request, why string) (*http.Response, error) {
	msg, _ := json.Marshal(map[string]any{"error": map[string]string{"message": why}})
	return &http.Response{StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(msg)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// Divergence is the first replayed request that differs from the trace.
type Divergence struct {
	Call     *RecordedCall // nil: the trace has no such call
	Purpose  string
	Ordinal  int
	Attempt  int
	Recorded []byte
	Replayed []byte
	Reason   string
}

// Describe is the divergence for people: which request, why, and a diff
// of the two bodies (recorded "-", replayed "+").
func (d *Divergence) Describe() string {
	var b strings.Builder
	if d.Call != nil {
		c := d.Call.Call
		fmt.Fprintf(&b, "request %d (%s #%d", c.Call, d.Purpose, d.Ordinal)
		if c.RunID != "" {
			fmt.Fprintf(&b, ", run %s", c.RunID)
		}
		if c.RequestID != "" {
			fmt.Fprintf(&b, ", prompt %s", c.RequestID)
		}
		fmt.Fprintf(&b, ", attempt %d, %s/%s) diverged: %s\n", d.Attempt, c.Provider, c.Model, d.Reason)
	} else {
		fmt.Fprintf(&b, "%s request #%d diverged: %s\n", d.Purpose, d.Ordinal, d.Reason)
	}
	if d.Recorded != nil || d.Replayed != nil {
		b.WriteString("--- recorded\n+++ replayed\n")
		b.WriteString(Diff(d.Recorded, d.Replayed))
	}
	return b.String()
}

// Diff is a line diff of two JSON documents, indented so that each member
// is a line: the common head and tail are cut down to three lines of
// context around the part that differs.
func Diff(a, b []byte) string {
	la, lb := jsonLines(a), jsonLines(b)
	pre := 0
	for pre < len(la) && pre < len(lb) && la[pre] == lb[pre] {
		pre++
	}
	suf := 0
	for suf < len(la)-pre && suf < len(lb)-pre && la[len(la)-1-suf] == lb[len(lb)-1-suf] {
		suf++
	}
	const context, maxLines = 3, 200
	var out strings.Builder
	start := max(pre-context, 0)
	fmt.Fprintf(&out, "@@ line %d @@\n", start+1)
	n := 0
	emit := func(prefix, line string) {
		if n < maxLines {
			out.WriteString(prefix + line + "\n")
		} else if n == maxLines {
			out.WriteString("[... diff cut short]\n")
		}
		n++
	}
	for _, l := range la[start:pre] {
		emit("  ", l)
	}
	for _, l := range la[pre : len(la)-suf] {
		emit("- ", l)
	}
	for _, l := range lb[pre : len(lb)-suf] {
		emit("+ ", l)
	}
	for _, l := range la[len(la)-suf : min(len(la), len(la)-suf+context)] {
		emit("  ", l)
	}
	return out.String()
}

func jsonLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		buf.Reset()
		buf.Write(b)
	}
	// Long strings (a system prompt, a history's text) are split at their
	// escaped newlines so that the diff shows the line that changed.
	text := strings.ReplaceAll(buf.String(), `\n`, "\\n\n")
	return strings.Split(text, "\n")
}
