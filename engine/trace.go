package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/mcp"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
	"github.com/loopdev/loop/internal/trace"
	"github.com/loopdev/loop/store"
)

// TracesConfig is config.json's "traces" (docs/configuration.md,
// docs/traces.md).
type TracesConfig struct {
	Enabled            *bool `json:"enabled,omitempty"`
	MaxBytesPerSession int64 `json:"maxBytesPerSession,omitempty"`
	RetentionDays      *int  `json:"retentionDays,omitempty"`
}

func (c TracesConfig) enabled() bool { return c.Enabled == nil || *c.Enabled }

func (c TracesConfig) retention() time.Duration {
	days := trace.DefaultRetentionDays
	if c.RetentionDays != nil {
		days = *c.RetentionDays
	}
	return time.Duration(days) * 24 * time.Hour
}

// ToolResult is a tool's result as Options.ToolResults supplies it.
type ToolResult struct {
	Content []convo.Block
	IsError bool
}

// TraceDir is where a session's trace lives (docs/traces.md).
func (e *Engine) TraceDir(workspaceID, id string) string {
	return e.root.Layout().Trace(workspaceID, id)
}

// newTrace makes the writer of a session's trace, or nil when the session
// is in memory or traces are off. It writes nothing yet.
func (e *Engine) newTrace(st *store.Session) *trace.Writer {
	cfg := e.catalog().config.Traces
	if !st.Persistent() || !cfg.enabled() {
		return nil
	}
	e.pruneOnce.Do(func() {
		e.pruning.Add(1)
		go func() {
			defer e.pruning.Done()
			e.pruneTraces(cfg.retention())
		}()
	})
	h := st.Header()
	ws := ""
	if h.WorkspaceID != nil {
		ws = *h.WorkspaceID
	}
	return trace.NewWriter(trace.Options{
		Dir:         e.TraceDir(ws, st.ID()),
		MaxBytes:    cfg.MaxBytesPerSession,
		SessionID:   st.ID(),
		WorkspaceID: ws,
		Cwd:         h.Cwd,
		Secrets:     e.secrets.Load,
		Logger:      e.log,
		Now:         e.traceNow,
	})
}

// pruneTraces removes session traces whose newest file is older than the
// retention window, except those being written (trace.Prune). It runs
// once per process, in the background.
func (e *Engine) pruneTraces(keep time.Duration) {
	if keep <= 0 {
		return
	}
	trace.Prune(e.root.Layout().Traces(), time.Now().Add(-keep), func(dir string, err error) {
		e.log.Error("trace retention", "dir", dir, "err", err)
	})
}

// sweepLeftovers removes, once per process and in the background, the
// temporary files and tombstones that writers killed mid-write left in the
// store (store.Root.SweepLeftovers, docs/storage.md): at the first
// persistent session, not at start-up, which does no I/O on the root.
func (e *Engine) sweepLeftovers() {
	e.sweepOnce.Do(func() {
		e.pruning.Add(1)
		go func() {
			defer e.pruning.Done()
			if n, err := e.root.SweepLeftovers(context.Background()); err != nil {
				e.log.Error("sweep store leftovers", "removed", n, "err", err)
			}
		}()
	})
}

// flushTraces waits until the traces of sessions and the retention and
// leftover sweeps are on disk (Shutdown: nothing writes under the data root after it).
func (e *Engine) flushTraces(sessions []*Session) {
	for _, s := range sessions {
		if s.trace != nil {
			s.trace.Flush()
		}
	}
	e.pruning.Wait()
}

// removeTrace deletes a session's trace with the session.
func (e *Engine) removeTrace(workspaceID, id string) {
	if err := os.RemoveAll(e.TraceDir(workspaceID, id)); err != nil {
		e.log.Error("delete trace", "session", id, "err", err)
	}
}

// configSecrets lists what no trace line, model error or log record may
// hold: every key variable's value (keyVariables: the apiKeyEnv keys and
// every variable a baseUrl or header value names), credential header
// values and the credentials a base URL carries; and the same of every MCP
// server config.json declares, globally or for a workspace (mcpSecrets).
// A variable that holds a whole URL (FAKE_LLM_URL, LOCAL_BASE_URL) gives
// only its credentials, so that traces and errors still say where a
// request went.
func configSecrets(cfg *Config, keyVars []string, getenv func(string) string) []string {
	var out []string
	for _, k := range keyVars {
		out = append(out, variableSecrets(getenv(k))...)
	}
	for _, pc := range cfg.Providers {
		out = append(out, redact.OfURL(expandEnv(pc.BaseURL, getenv))...)
		h := map[string]string{}
		for k, v := range pc.Headers {
			h[k] = expandEnv(v, getenv)
		}
		out = append(out, redact.OfHeaders(h)...)
	}
	out = append(out, mcpSecrets(cfg.MCPServers, getenv)...)
	for _, wc := range cfg.Workspaces {
		out = append(out, mcpSecrets(wc.MCPServers, getenv)...)
	}
	return out
}

// variableSecrets is what of a secret variable's value v is secret: all
// of it, or a URL's credentials only.
func variableSecrets(v string) []string {
	if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
		return redact.OfURL(v)
	}
	return []string{v}
}

// mcpSecrets lists the secrets of an mcpServers object (docs/mcp.md): the
// values of the variables its env and headers values name, credential
// header values, and the credentials a url carries. Entries that do not
// parse never start, so they have none.
func mcpSecrets(raw map[string]json.RawMessage, getenv func(string) string) []string {
	servers, _ := mcp.ParseServers(raw)
	var out []string
	for _, sc := range servers {
		for _, k := range sc.Variables() {
			out = append(out, variableSecrets(getenv(k))...)
		}
		out = append(out, redact.OfHeaders(sc.ExpandedHeaders(getenv))...)
		out = append(out, redact.OfURL(sc.URL)...)
	}
	return out
}

type runScopeKey struct{}

type runScope struct {
	runID, requestID string
	resumed          bool
}

func withRunScope(ctx context.Context, spec runSpec) context.Context {
	return context.WithValue(ctx, runScopeKey{}, runScope{runID: spec.runID, requestID: spec.requestID, resumed: spec.resumed})
}

// tracePrompt records the input that starts a run.
func (s *Session) tracePrompt(spec runSpec) {
	if s.trace == nil {
		return
	}
	h := s.st.Header()
	r := &trace.Record{Type: trace.TypeResume, RunID: spec.runID, RequestID: spec.requestID, Permission: h.Permission, Effort: h.Effort}
	if h.Model != nil {
		r.Provider, r.Model = h.Model.Provider, h.Model.ID
	}
	s.traceConfig()
	if in := spec.input; in != nil {
		r.Type = trace.TypePrompt
		r.Input = &trace.Input{Text: in.Text, Skills: in.Skills}
		for _, img := range in.Images {
			b, _ := jsonenc.Marshal(img)
			r.Input.Images = append(r.Input.Images, b)
		}
		for _, f := range in.Files {
			b, _ := jsonenc.Append(nil, f)
			r.Input.Files = append(r.Input.Files, b)
		}
	}
	s.trace.Add(r)
}

// traceStep records a command that calls the model outside a run: a
// compaction or a title the user asked for (loop replay repeats them).
func (s *Session) traceStep(typ string) {
	if s.trace != nil {
		s.traceConfig()
		s.trace.Add(&trace.Record{Type: typ})
	}
}

// traceConfig records, ahead of a step, the configuration its requests are
// made with, when the trace does not have it yet (trace.Writer.Config).
func (s *Session) traceConfig() {
	s.trace.Config(s.e.catalog().requestConfig)
}

// traceRunEnd records that a run ended (docs/traces.md, "Versions"): a
// step of the trace without its end lost its last records.
func (s *Session) traceRunEnd(spec runSpec, outcome string) {
	if s.trace == nil {
		return
	}
	step := trace.TypeResume
	if spec.input != nil {
		step = trace.TypePrompt
	}
	s.trace.Add(&trace.Record{Type: trace.TypeEnd, Step: step, RunID: spec.runID, Outcome: outcome})
}

// endingStep wraps the release of a command traced as a step (traceStep):
// its end record is added once, before the command lets go, so that
// whoever waits for the command (an abort, shutdown) finds it added.
func (s *Session) endingStep(step string, release func()) func() {
	if s.trace == nil {
		return release
	}
	var once sync.Once
	return func() {
		once.Do(func() { s.trace.Add(&trace.Record{Type: trace.TypeEnd, Step: step}) })
		release()
	}
}

// recordedProvider is a provider as a trace's config record holds it.
type recordedProvider struct {
	API    string        `json:"api"`
	Models []ModelConfig `json:"models"`
	Retry  *RetryConfig  `json:"retry,omitempty"`
	Titles bool          `json:"titles"`
}

// requestConfig encodes, as config.json would hold it, what of cfg shapes
// a session's requests and which calls it makes: each HTTP provider (in
// file order) with its api, its models as in force (context window and
// output limit filled in), retries and background titles, and compaction,
// titles and the default budget; titles is false when the host turned
// background titles off (Options.NoBackgroundTitles, loop run), so that a
// replay starts none either. A replay makes its requests with it, so
// that a trace replays alike wherever it is replayed (docs/traces.md,
// "Replay"). Endpoints, keys and headers stay out (the trace answers the
// replay's requests), and so do MCP servers: a replay runs no command a
// trace names.
func requestConfig(cfg *Config, models []Model, titles bool) []byte {
	var providers bytes.Buffer
	for _, pc := range cfg.Providers {
		if !provider.Replayable(pc.API) {
			continue
		}
		rp := recordedProvider{API: pc.API, Retry: pc.Retry, Titles: pc.Titles == nil || *pc.Titles, Models: []ModelConfig{}}
		for _, m := range models {
			if m.Provider == pc.Name {
				rp.Models = append(rp.Models, ModelConfig{ID: m.ID, Name: m.Name, ContextWindow: m.ContextWindow,
					MaxOutputTokens: m.MaxOutputTokens, Images: m.Images, Efforts: m.Efforts, Cost: m.Cost})
			}
		}
		name, _ := jsonenc.Marshal(pc.Name)
		body, _ := jsonenc.Marshal(rp)
		if providers.Len() > 0 {
			providers.WriteByte(',')
		}
		providers.Write(name)
		providers.WriteByte(':')
		providers.Write(body)
	}
	type defaults struct {
		Budget *BudgetConfig `json:"budget,omitempty"`
	}
	recordedTitles := cfg.Titles
	if !titles {
		off := false
		recordedTitles = TitleConfig{Enabled: &off}
	}
	out, _ := jsonenc.Marshal(struct {
		Providers  json.RawMessage  `json:"providers"`
		Compaction CompactionConfig `json:"compaction,omitzero"`
		Titles     TitleConfig      `json:"titles,omitzero"`
		Defaults   defaults         `json:"defaults,omitzero"`
	}{json.RawMessage("{" + providers.String() + "}"), cfg.Compaction, recordedTitles, defaults{cfg.Defaults.Budget}})
	return out
}

// traceTool records one tool execution.
func (s *Session) traceTool(ctx context.Context, runID string, call convo.Block, args json.RawMessage, res convo.Message, started time.Time) {
	if s.trace == nil {
		return
	}
	size := 0
	for _, b := range res.Content {
		size += len(b.Text) + len(b.Data)
	}
	outcome := "ok"
	switch {
	case ctx.Err() != nil:
		outcome = "cancelled"
	case res.IsError:
		outcome = "error"
	}
	s.trace.Add(&trace.Record{Type: trace.TypeTool, RunID: runID, ToolCallID: call.ID, Name: call.Name, Arguments: args,
		DurationMs: time.Since(started).Milliseconds(), ResultBytes: size, IsError: res.IsError, Outcome: outcome,
		Result: trace.BlocksOf(res.Content)})
}

// replayedTool answers a tool call from Options.ToolResults (loop replay).
func (s *Session) replayedTool(call convo.Block, args json.RawMessage) (ToolResult, bool) {
	if s.e.opts.ToolResults == nil {
		return ToolResult{}, false
	}
	return s.e.opts.ToolResults(s.id, call.ID, call.Name, args)
}

// traced wraps a session's provider so that every call lands in the trace.
func (s *Session) traced(m Model, p provider.Provider) provider.Provider {
	if s.trace == nil || p == nil {
		return p
	}
	return &tracedProvider{inner: p, w: s.trace, provider: m.Provider, api: m.API, http: provider.Replayable(m.API)}
}

// tracedProvider keeps of its model what a call record names (a Model is
// some 400 bytes, and one is made a turn).
type tracedProvider struct {
	inner         provider.Provider
	w             *trace.Writer
	provider, api string
	// http: the API's requests are HTTP bodies the trace records whole
	// (provider.API.Replayable); otherwise the call record keeps the
	// logical request and the reply.
	http bool
}

func (p *tracedProvider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (convo.Message, error) {
	scope, _ := ctx.Value(runScopeKey{}).(runScope)
	purpose := trace.PurposeMain
	switch {
	case req.Purpose == provider.PurposeTitle:
		purpose = trace.PurposeTitle
	case req.Purpose == provider.PurposeSummary:
		purpose = trace.PurposeSummary
	case scope.resumed:
		purpose = trace.PurposeResume
	}
	rec := trace.Record{Purpose: purpose, RunID: scope.runID, RequestID: scope.requestID,
		Provider: p.provider, API: p.api, Model: req.Model, Effort: req.Effort}
	if !p.http {
		rec.LogicalOf = logicalRequest(req) // encoded by the writer, a long one in pieces
	}
	call := p.w.StartCall(rec)
	msg, err := p.inner.Stream(provider.WithObserver(ctx, call), req, onDelta)
	res := trace.Record{StopReason: msg.StopReason, Usage: trace.UsageOf(msg.Usage)}
	if err != nil {
		res.Error = err.Error()
	}
	if !p.http {
		res.Content = trace.BlocksOf(msg.Content)
	}
	call.Finish(res)
	return msg, err
}

// logicalRequest is what a provider without an HTTP body was asked: the
// messages since the model last answered (the new user message or tool
// results), with messagesFrom their index in the request, and the request's
// message count. Not the whole history: such a provider does no work that
// grows with it, and the trace must not either (docs/traces.md).
func logicalRequest(req provider.Request) any {
	from := len(req.Messages)
	for from > 0 && req.Messages[from-1].Role != convo.RoleAssistant {
		from--
	}
	msgs := make([]map[string]any, 0, len(req.Messages)-from)
	for _, m := range req.Messages[from:] {
		msgs = append(msgs, map[string]any{"role": m.Role, "content": trace.BlocksOf(m.Content), "toolCallId": m.ToolCallID, "isError": m.IsError})
	}
	tools := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = t.Name
	}
	return map[string]any{"model": req.Model, "system": req.System, "messageCount": len(req.Messages), "messagesFrom": from, "messages": msgs, "tools": tools,
		"maxOutputTokens": req.MaxOutputTokens, "effort": req.Effort, "purpose": req.Purpose}
}
