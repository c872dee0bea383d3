package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"
)

// ttyEnv names the terminal print mode asks on (approvals, /flush):
// default /dev/tty, the controlling terminal; "none" never asks, which
// keeps a run under a harness from ever waiting for a person
// (docs/cli.md "Approvals").
const ttyEnv = "LOOP_TTY"

// terminal is a line-oriented conversation with the person at the
// controlling terminal, beside whatever stdin and stdout are connected to.
type terminal struct {
	f     *os.File
	once  sync.Once
	lines chan string // closed at EOF
	mu    sync.Mutex  // one question at a time
}

// openTerminal opens the controlling terminal, or returns nil when there
// is none (no controlling terminal, LOOP_TTY=none).
func openTerminal() *terminal {
	path := os.Getenv(ttyEnv)
	switch path {
	case "none":
		return nil
	case "":
		path = "/dev/tty"
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	return &terminal{f: f}
}

func (t *terminal) close() {
	if t != nil {
		_ = t.f.Close()
	}
}

// start reads lines on one goroutine for the life of the process, so a
// question given up (its run was aborted) does not leave a reader behind
// that would swallow the answer to the next one.
func (t *terminal) start() {
	t.once.Do(func() {
		t.lines = make(chan string)
		go func() {
			defer close(t.lines)
			r := bufio.NewReader(t.f)
			for {
				line, err := r.ReadString('\n')
				if line != "" {
					t.lines <- strings.TrimRight(line, "\r\n")
				}
				if err != nil {
					return
				}
			}
		}()
	})
}

// ask writes prompt to the terminal and returns the next line typed
// there; io.EOF when the terminal closed (Ctrl-D), ctx.Err() when ctx
// ends first.
func (t *terminal) ask(ctx context.Context, prompt string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start()
	fmt.Fprint(t.f, prompt)
	select {
	case line, ok := <-t.lines:
		if !ok {
			return "", io.EOF
		}
		return line, nil
	case <-ctx.Done():
		fmt.Fprintln(t.f)
		return "", ctx.Err()
	}
}

// say writes one line to the terminal.
func (t *terminal) say(format string, args ...any) {
	fmt.Fprintf(t.f, format+"\n", args...)
}

// isTerminal reports whether r or w is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
