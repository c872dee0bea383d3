package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientInfo is how Loop introduces itself to servers.
func clientInfo() *sdk.Implementation { return &sdk.Implementation{Name: "loop", Version: "1"} }

// server supervises one configured server: it connects, serves until the
// connection dies, and restarts with backoff. Its mutable fields are
// guarded by Manager.mu.
type server struct {
	m       *Manager
	name    string
	cfg     ServerConfig
	client  *sdk.Client
	refresh chan struct{} // tools/list_changed arrived; buffered 1

	state    string
	lastErr  string
	restarts int
	tools    []Tool
	conn     *conn // the ready connection, nil otherwise
}

func newServer(m *Manager, name string, cfg ServerConfig) *server {
	s := &server{m: m, name: name, cfg: cfg, state: StateStopped, refresh: make(chan struct{}, 1)}
	s.client = sdk.NewClient(clientInfo(), &sdk.ClientOptions{
		Logger: m.logger.With("mcpServer", name),
		// The handler runs on the connection's reader: only signal the
		// supervisor, which lists the tools again.
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case s.refresh <- struct{}{}:
			default:
			}
		},
	})
	return s
}

// run is the supervisor loop.
func (s *server) run(ctx context.Context) {
	defer s.m.wg.Done()
	o := s.m.opts
	log := s.m.logger.With("mcpServer", s.name)
	delay := o.backoffBase
	failures := 0 // consecutive failed starts
	for {
		c, err := s.connect(ctx)
		if ctx.Err() != nil {
			if c != nil {
				c.close()
			}
			s.setStopped()
			return
		}
		if err != nil {
			failures++
			var perm *permanentError
			if errors.As(err, &perm) || failures >= o.maxFailures {
				log.Warn("mcp server failed", "error", err, "attempts", failures)
				s.setFailed(err)
				return
			}
			log.Warn("mcp server failed to start; retrying", "error", err, "delay", delay)
			s.setRestarting(err)
		} else {
			failures = 0
			readyAt := time.Now()
			s.setReady(c)
			log.Info("mcp server ready", "tools", len(c.tools))
			err = s.serve(ctx, c)
			if ctx.Err() != nil {
				c.close()
				s.setStopped()
				return
			}
			if time.Since(readyAt) >= o.stableAfter {
				delay = o.backoffBase
			}
			log.Warn("mcp server died; restarting", "error", err, "delay", delay)
			s.setRestarting(err) // first, so calls stop choosing this connection
			c.close()
		}
		if !sleepCtx(ctx, delay) {
			s.setStopped()
			return
		}
		delay = min(delay*2, o.backoffMax)
		s.m.update(func() { s.restarts++ })
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *server) setReady(c *conn) {
	s.m.update(func() { s.state, s.conn, s.tools = StateReady, c, c.tools })
}

func (s *server) setRestarting(err error) {
	s.m.update(func() { s.state, s.lastErr, s.tools, s.conn = StateRestarting, err.Error(), nil, nil })
}

func (s *server) setFailed(err error) {
	s.m.update(func() { s.state, s.lastErr, s.tools, s.conn = StateFailed, err.Error(), nil, nil })
}

func (s *server) setStopped() {
	s.m.update(func() { s.state, s.tools, s.conn = StateStopped, nil, nil })
}

// connect starts (stdio) or reaches (HTTP) the server, initializes the MCP
// session and lists the tools, all within the connect timeout.
func (s *server) connect(ctx context.Context) (*conn, error) {
	cctx, cancel := context.WithTimeout(ctx, s.m.opts.connectTimeout)
	defer cancel()

	var (
		transport sdk.Transport
		p         *proc
	)
	switch s.cfg.Transport() {
	case TransportStdio:
		var err error
		p, err = startProc(s.cfg, s.m.cwd, s.m.hideEnv, s.m.sandboxFor(s.cfg), s.m.opts.stopGrace, s.m.logger.With("mcpServer", s.name))
		if err != nil {
			return nil, err
		}
		transport = &sdk.IOTransport{Reader: p.stdout, Writer: stopOnClose{p}}
	case TransportHTTP:
		transport = httpTransport(s.cfg)
	default:
		return nil, &permanentError{errors.New("neither command nor url is set")}
	}

	cs, err := s.client.Connect(cctx, transport, nil)
	if err != nil {
		if p != nil {
			return nil, s.startupFailure(cctx, p, fmt.Errorf("initialize: %w", err))
		}
		return nil, fmt.Errorf("connecting to %s: %w", s.cfg.URL, err)
	}
	callCtx, stopCalls := context.WithCancel(context.Background())
	c := &conn{cs: cs, proc: p, callCtx: callCtx, stopCalls: stopCalls, exitWait: s.m.opts.exitWait, lost: make(chan struct{})}
	c.tools, err = s.listTools(cctx, cs)
	if err != nil {
		c.close()
		if p != nil {
			return nil, s.startupFailure(cctx, p, err)
		}
		return nil, err
	}
	return c, nil
}

// startupFailure explains a failed start: a process that died says how
// (with its stderr), which beats the SDK's "connection closed".
// ctx is the connect context: once it is done (timeout or Close), the
// deadline is the story, whatever the exit looked like.
func (s *server) startupFailure(ctx context.Context, p *proc, err error) error {
	if ctx.Err() != nil {
		p.stop()
		return fmt.Errorf("%w%s", err, p.stderrSuffix())
	}
	if p.diedAlone(s.m.opts.exitWait) {
		p.stop()
		return fmt.Errorf("%w during startup", p.exitError())
	}
	p.stop()
	return fmt.Errorf("%w%s", err, p.stderrSuffix())
}

func (s *server) listTools(ctx context.Context, cs *sdk.ClientSession) ([]Tool, error) {
	var tools []Tool
	seen := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		name := ToolName(s.name, t.Name)
		if seen[name] {
			// Two tool names that differ only in characters the
			// providers refuse: the hash of the original tells them apart.
			name = hashedToolName(s.name, t.Name)
			if seen[name] {
				s.m.logger.Warn("mcp tool name collision; tool skipped", "mcpServer", s.name, "tool", t.Name)
				continue
			}
		}
		seen[name] = true
		schema, err := jsonenc.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tools = append(tools, Tool{
			Name:        name,
			Server:      s.name,
			ToolName:    t.Name,
			Title:       t.Title,
			Description: t.Description,
			Schema:      schema,
		})
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	return tools, nil
}

// serve waits until the connection dies or ctx ends, refreshing the tool
// list when the server announces a change.
func (s *server) serve(ctx context.Context, c *conn) error {
	closed := make(chan error, 1)
	go func() { closed <- c.cs.Wait() }()
	var exited <-chan struct{}
	if c.proc != nil {
		exited = c.proc.exited
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return c.proc.exitError()
		case <-c.lost:
			return c.lostErr
		case err := <-closed:
			if c.proc != nil {
				if c.proc.diedAlone(s.m.opts.exitWait) {
					return c.proc.exitError()
				}
				return fmt.Errorf("connection closed: %v%s", err, c.proc.stderrSuffix())
			}
			if err == nil {
				err = errors.New("closed by the server")
			}
			return fmt.Errorf("connection lost: %w", err)
		case <-s.refresh:
			lctx, cancel := context.WithTimeout(ctx, s.m.opts.connectTimeout)
			tools, err := s.listTools(lctx, c.cs)
			cancel()
			if err != nil {
				s.m.logger.Warn("mcp tool list refresh failed", "mcpServer", s.name, "error", err)
				continue
			}
			s.m.update(func() {
				if s.conn == c {
					s.tools = tools
				}
			})
		}
	}
}

// conn is one live MCP session.
type conn struct {
	cs    *sdk.ClientSession
	proc  *proc // nil for HTTP
	tools []Tool
	// callCtx ends when the connection is closed, aborting calls in
	// flight: the SDK's Close waits for outstanding calls, and a tool that
	// never answers must not hold Close.
	callCtx   context.Context
	stopCalls context.CancelFunc
	exitWait  time.Duration

	// lost is closed when a call learns the connection is unusable though
	// the SDK keeps it open (an HTTP server that forgot the session).
	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error
}

func (c *conn) markLost(err error) {
	c.lostOnce.Do(func() {
		c.lostErr = err
		close(c.lost)
	})
}

// isProtocolError reports whether err is the server's JSON-RPC error answer
// (unknown tool, invalid params), as opposed to a broken connection.
func isProtocolError(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr)
}

func (c *conn) close() {
	c.stopCalls()
	if c.proc != nil {
		c.proc.stop()
	}
	c.cs.Close()
}

func (c *conn) call(parent context.Context, server, tool string, args any) (Result, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	defer context.AfterFunc(c.callCtx, cancel)()
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		switch {
		case parent.Err() != nil:
			err = fmt.Errorf("call abandoned: %w", context.Cause(parent))
		case c.callCtx.Err() != nil:
			err = errors.New("the server stopped during the call")
		case c.proc != nil && !isProtocolError(err) && c.proc.diedAlone(c.exitWait):
			// The connection broke because the server died: say how.
			err = fmt.Errorf("%w: %w", err, c.proc.exitError())
		case errors.Is(err, sdk.ErrSessionMissing):
			c.markLost(fmt.Errorf("session lost: %w", err))
		}
		return Result{}, fmt.Errorf("mcp server %q: tool %q: %w", server, tool, err)
	}
	return convertResult(res), nil
}
