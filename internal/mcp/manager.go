package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/loopdev/loop/internal/sandbox"
)

// Server states, as ServerStatus.State reports them.
const (
	StateStarting   = "starting"   // first connection in progress
	StateReady      = "ready"      // connected; its tools are offered
	StateRestarting = "restarting" // died or failed to start; retrying after a backoff
	StateFailed     = "failed"     // gave up; Error says why
	StateStopped    = "stopped"    // not started, disabled, or closed
)

// Errors of Call.
var (
	ErrUnknownTool       = errors.New("unknown MCP tool")
	ErrServerUnavailable = errors.New("MCP server unavailable")
	ErrClosed            = errors.New("MCP manager closed")
)

// Tool is one MCP tool as the model sees it.
type Tool struct {
	Name        string // namespaced: "mcp__<server>__<tool>"
	Server      string
	ToolName    string // the name the server knows
	Title       string
	Description string
	Schema      json.RawMessage // JSON Schema of the arguments object
}

// ServerStatus is one server's line in the session snapshot.
type ServerStatus struct {
	Name      string
	Transport string // "stdio" or "http"
	State     string
	// Error says why the server is restarting or failed; empty otherwise.
	Error string
	// LastError is the latest failure, kept after a successful restart so
	// the snapshot can explain a nonzero Restarts.
	LastError string
	Restarts  int
	Tools     int
	Disabled  bool
}

// options are the Manager's timings; tests shorten them.
type options struct {
	backoffBase    time.Duration // first delay before a restart
	backoffMax     time.Duration // the doubling stops here
	maxFailures    int           // consecutive failed starts before "failed"
	stableAfter    time.Duration // ready this long resets the backoff
	connectTimeout time.Duration // start + initialize + first tools/list
	stopGrace      time.Duration // after closing stdin, and again after SIGTERM
	exitWait       time.Duration // how long a dead connection waits for the exit status
}

func defaultOptions() options {
	return options{
		backoffBase:    200 * time.Millisecond,
		backoffMax:     30 * time.Second,
		maxFailures:    5,
		stableAfter:    time.Minute,
		connectTimeout: 30 * time.Second,
		stopGrace:      2 * time.Second,
		exitWait:       time.Second,
	}
}

// Manager runs the MCP servers of one working directory.
type Manager struct {
	cwd     string
	logger  *slog.Logger
	opts    options
	hideEnv []string        // set before Start; read by the supervisors
	sandbox *sandbox.Policy // set before Start; nil runs servers unsandboxed

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per running supervisor

	mu        sync.Mutex
	servers   []*server // in name order
	started   bool
	closed    bool
	changed   chan struct{} // closed and replaced on every change (WaitReady)
	listeners []func()
	dirty     chan struct{} // wakes the listener dispatcher; buffered 1
}

// NewManager returns a Manager for servers; nothing starts before Start.
// cwd is the working directory of stdio servers (a relative
// ServerConfig.Cwd resolves against it); empty means Loop's own.
func NewManager(servers map[string]ServerConfig, cwd string, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		cwd:     cwd,
		logger:  logger,
		opts:    defaultOptions(),
		ctx:     ctx,
		cancel:  cancel,
		changed: make(chan struct{}),
		dirty:   make(chan struct{}, 1),
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m.servers = append(m.servers, newServer(m, name, servers[name]))
	}
	return m
}

// HideEnv names variables of Loop's environment that stdio servers must
// not inherit (the ones holding provider keys) unless their config's env
// sets them. Call it before Start.
func (m *Manager) HideEnv(names []string) { m.hideEnv = slices.Clone(names) }

// Sandbox runs the stdio servers in the OS sandbox p, except those whose
// entry says "sandbox": false; nil (the default) runs them unsandboxed.
// Call it before Start.
func (m *Manager) Sandbox(p *sandbox.Policy) { m.sandbox = p }

// Cwd returns the working directory the Manager was made for; the engine
// compares it to decide whether a session switch needs new servers.
func (m *Manager) Cwd() string { return m.cwd }

// Start connects every enabled server in the background. Later calls, and
// calls after Close, do nothing.
func (m *Manager) Start() {
	m.mu.Lock()
	if m.started || m.closed {
		m.mu.Unlock()
		return
	}
	m.started = true
	for _, s := range m.servers {
		if s.cfg.Disabled || s.cfg.Transport() == "" {
			continue
		}
		// Configs normally come through ParseServers; one that did not is
		// checked here rather than half-started.
		if err := checkServer(s.name, s.cfg); err != nil {
			s.state, s.lastErr = StateFailed, err.Error()
			continue
		}
		s.state = StateStarting
		m.wg.Add(1)
		go s.run(m.ctx)
	}
	m.mu.Unlock()
	go m.dispatch()
	m.update(nil)
}

// WaitReady waits until no server is starting or restarting (each is ready,
// failed or stopped), or until ctx ends, whose error it then returns.
func (m *Manager) WaitReady(ctx context.Context) error {
	for {
		m.mu.Lock()
		settled := true
		for _, s := range m.servers {
			if s.state == StateStarting || s.state == StateRestarting {
				settled = false
				break
			}
		}
		ch := m.changed
		m.mu.Unlock()
		if settled {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Tools returns the tools of the ready servers, ordered by server name and
// then tool name, so the tool list (and the provider's prompt cache) stays
// stable across calls.
func (m *Manager) Tools() []Tool {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Tool
	for _, s := range m.servers {
		if s.state == StateReady {
			out = append(out, s.tools...)
		}
	}
	return out
}

// Status returns every configured server's state, in name order.
func (m *Manager) Status() []ServerStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ServerStatus, 0, len(m.servers))
	for _, s := range m.servers {
		st := ServerStatus{
			Name:      s.name,
			Transport: s.cfg.Transport(),
			State:     s.state,
			LastError: s.lastErr,
			Restarts:  s.restarts,
			Disabled:  s.cfg.Disabled,
		}
		if s.state == StateRestarting || s.state == StateFailed {
			st.Error = s.lastErr
		}
		if s.state == StateReady {
			st.Tools = len(s.tools)
		}
		out = append(out, st)
	}
	return out
}

// OnChange registers fn to run whenever a server's status or the tool list
// changes. Calls are made one at a time from a goroutine of the Manager,
// coalesced (one call may stand for several changes), never with a Manager
// lock held, and stop once Close has begun.
func (m *Manager) OnChange(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.listeners = append(m.listeners, fn)
}

// Call calls the tool with namespaced name. args is the arguments object
// (empty or null means {}). A tool that reports failure yields a Result with
// IsError; an unknown tool, a server that is not ready, a protocol error, a
// server that died during the call, or a cancelled ctx yield an error.
func (m *Manager) Call(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	arguments, err := callArguments(args)
	if err != nil {
		return Result{}, fmt.Errorf("mcp tool %s: %w", name, err)
	}
	s, toolName, c, err := m.lookup(name)
	if err != nil {
		return Result{}, err
	}
	return c.call(ctx, s.name, toolName, arguments)
}

func (m *Manager) lookup(name string) (*server, string, *conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, "", nil, ErrClosed
	}
	serverName, ok := ServerOf(name)
	if !ok {
		return nil, "", nil, fmt.Errorf("%w: %s", ErrUnknownTool, name)
	}
	i := slices.IndexFunc(m.servers, func(s *server) bool { return s.name == serverName })
	if i < 0 {
		return nil, "", nil, fmt.Errorf("%w: %s (no server %q)", ErrUnknownTool, name, serverName)
	}
	s := m.servers[i]
	if s.state != StateReady || s.conn == nil {
		msg := fmt.Sprintf("%s: server %q is %s", name, s.name, s.state)
		if s.state != StateStopped && s.lastErr != "" {
			msg += ": " + s.lastErr
		}
		return nil, "", nil, fmt.Errorf("%w: %s", ErrServerUnavailable, msg)
	}
	j := slices.IndexFunc(s.tools, func(t Tool) bool { return t.Name == name })
	if j < 0 {
		return nil, "", nil, fmt.Errorf("%w: %s (server %q has no such tool)", ErrUnknownTool, name, s.name)
	}
	return s, s.tools[j].ToolName, s.conn, nil
}

// callArguments checks that args is a JSON object and keeps it raw, so the
// server receives exactly what the model wrote.
func callArguments(args json.RawMessage) (any, error) {
	var probe any
	if len(args) == 0 || string(args) == "null" {
		return map[string]any{}, nil
	}
	if err := json.Unmarshal(args, &probe); err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if _, ok := probe.(map[string]any); !ok {
		return nil, errors.New("arguments must be a JSON object")
	}
	return args, nil
}

// Close stops every server (stdio processes are asked to exit, then
// killed) and waits for them. OnChange listeners get no further calls.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
	return nil
}

// update applies fn (if any) under the lock and signals the change
// to WaitReady and the listeners.
func (m *Manager) update(fn func()) {
	m.mu.Lock()
	if fn != nil {
		fn()
	}
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()
	select {
	case m.dirty <- struct{}{}:
	default:
	}
}

// dispatch runs the listeners after changes, one call at a time, so a slow
// listener never stalls a server's supervisor.
func (m *Manager) dispatch() {
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.dirty:
		}
		m.mu.Lock()
		ls := slices.Clone(m.listeners)
		closed := m.closed
		m.mu.Unlock()
		if closed {
			return
		}
		for _, fn := range ls {
			fn()
		}
	}
}

// sandboxFor is the sandbox of one stdio server: the Manager's, unless the
// server's entry opts out.
func (m *Manager) sandboxFor(cfg ServerConfig) *sandbox.Policy {
	if cfg.Sandbox != nil && !*cfg.Sandbox {
		return nil
	}
	return m.sandbox
}
