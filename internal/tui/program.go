package tui

import (
	"context"
	"os"
	"sync"
	"sync/atomic"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
)

// ColorMode is --color: auto follows NO_COLOR and the terminal.
type ColorMode string

const (
	ColorAuto   ColorMode = "auto"
	ColorAlways ColorMode = "always"
	ColorNever  ColorMode = "never"
)

// UsesColor decides colour for a terminal with environment env: never
// under --color never or NO_COLOR (any value but empty, no-color.org)
// unless --color always; else what the terminal supports.
func UsesColor(mode ColorMode, env []string) bool {
	switch mode {
	case ColorAlways:
		return true
	case ColorNever:
		return false
	}
	for _, kv := range env {
		if len(kv) > len("NO_COLOR=") && kv[:len("NO_COLOR=")] == "NO_COLOR=" {
			return false
		}
	}
	return colorprofile.Env(env) > colorprofile.Ascii
}

// Program is the running UI.
type Program struct {
	p     *tea.Program
	queue *queue
	in    *Input
}

// New makes the UI on the terminal in (keys) and out (screen), with
// colour as decided (UsesColor).
func New(app App, in, out *os.File, color bool, env []string) *Program {
	prof := colorprofile.ANSI
	if !color {
		prof = colorprofile.Ascii
	}
	input := &Input{f: in, ended: make(chan struct{})}
	screen := &screen{f: out}
	m := newModel(app, Palette{Color: color})
	m.writes = screen.writes.Load
	p := tea.NewProgram(m,
		tea.WithInput(input), tea.WithOutput(screen), tea.WithEnvironment(env),
		tea.WithColorProfile(prof), tea.WithoutSignalHandler(), tea.WithContext(context.Background()))
	return &Program{p: p, queue: newQueue(p), in: input}
}

// Run shows the UI until Quit; it restores the terminal before it returns.
func (p *Program) Run() error {
	_, err := p.p.Run()
	p.queue.close()
	return err
}

// Send shows msg. It never blocks (the engine's event subscribers call
// it): messages wait in order for the UI to take them.
func (p *Program) Send(msg any) { p.queue.add(msg) }

// Kill ends the UI at once, restoring the terminal (a signal ends the
// process).
func (p *Program) Kill() { p.p.Kill() }

// InputEnded is closed when the terminal's input ends (it went away).
func (p *Program) InputEnded() <-chan struct{} { return p.in.ended }

// Input is the terminal's input as the UI reads it; it tells when the
// input ends, which Bubble Tea itself does not report.
type Input struct {
	f     *os.File
	once  sync.Once
	ended chan struct{}
}

func (i *Input) Read(b []byte) (int, error) {
	n, err := i.f.Read(b)
	if err != nil {
		i.once.Do(func() { close(i.ended) })
	}
	return n, err
}

func (i *Input) Write(b []byte) (int, error) { return i.f.Write(b) }
func (i *Input) Close() error                { return nil }
func (i *Input) Fd() uintptr                 { return i.f.Fd() }
func (i *Input) Name() string                { return i.f.Name() }

// screen is the terminal's output; it counts the writes, so that the UI
// can tell when a frame has been drawn since the terminal's size changed
// (model.sized).
type screen struct {
	f      *os.File
	writes atomic.Int64
}

func (s *screen) Write(b []byte) (int, error) {
	s.writes.Add(1)
	return s.f.Write(b)
}

func (s *screen) Fd() uintptr                { return s.f.Fd() }
func (s *screen) Read(b []byte) (int, error) { return s.f.Read(b) }
func (s *screen) Close() error               { return nil }
func (s *screen) Name() string               { return s.f.Name() }

// queue hands messages to the program one at a time, in order, from a
// goroutine of its own: tea.Program.Send blocks until the UI takes them.
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	msgs   []any
	closed bool
	done   chan struct{}
}

func newQueue(p *tea.Program) *queue {
	q := &queue{done: make(chan struct{})}
	q.cond = sync.NewCond(&q.mu)
	go func() {
		defer close(q.done)
		for {
			q.mu.Lock()
			for len(q.msgs) == 0 && !q.closed {
				q.cond.Wait()
			}
			if q.closed {
				q.mu.Unlock()
				return
			}
			msgs := q.msgs
			q.msgs = nil
			q.mu.Unlock()
			for _, m := range msgs {
				p.Send(m)
			}
		}
	}()
	return q
}

func (q *queue) add(m any) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.msgs = append(q.msgs, m)
		q.cond.Signal()
	}
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Signal()
	q.mu.Unlock()
}
