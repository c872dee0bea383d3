package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// lineHandler writes what the engine logs (a warning from an MCP server,
// a write that failed beside the run) as the commands write everything
// else on stderr: one plain line naming the command, "loop run: usage not
// saved: <why> (session 01a2…)". slog's text format (time=… level=… msg=…)
// is for the server's log files, not for a person at a shell.
type lineHandler struct {
	out    *lineWriter
	prefix string // the command: "loop run"
	level  slog.Leveler
	attrs  []slog.Attr
	group  string // the keys of a record's attributes are prefixed with it
}

// lineWriter keeps lines whole when several goroutines log at once.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// newLineLogger logs records at level or above to w as lines naming
// command.
func newLineLogger(w io.Writer, command string, level slog.Leveler) *slog.Logger {
	return slog.New(&lineHandler{out: &lineWriter{w: w}, prefix: command, level: level})
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var why string
	var rest []string
	add := func(a slog.Attr, group string) {
		a.Value = a.Value.Resolve()
		switch {
		case a.Equal(slog.Attr{}):
		case a.Key == "err" && group == "":
			why = a.Value.String()
		case group != "":
			rest = append(rest, group+"."+a.Key+" "+a.Value.String())
		default:
			rest = append(rest, a.Key+" "+a.Value.String())
		}
	}
	for _, a := range h.attrs {
		add(a, "") // keyed with their group by WithAttrs
	}
	r.Attrs(func(a slog.Attr) bool {
		add(a, h.group)
		return true
	})
	var b strings.Builder
	b.WriteString(h.prefix + ": " + r.Message)
	if why != "" {
		b.WriteString(": " + why)
	}
	if len(rest) > 0 {
		b.WriteString(" (" + strings.Join(rest, ", ") + ")")
	}
	// One record, one line: an error that joins several has newlines.
	line := strings.ReplaceAll(b.String(), "\n", "; ") + "\n"
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	_, err := io.WriteString(h.out.w, line)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	return nil
}

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	h2.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range attrs {
		if h.group != "" {
			a.Key = h.group + "." + a.Key
		}
		h2.attrs = append(h2.attrs, a)
	}
	return &h2
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	if h.group != "" {
		name = h.group + "." + name
	}
	h2.group = name
	return &h2
}
