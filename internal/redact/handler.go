package redact

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns a handler that removes the secrets of set() from every
// record before h sees it: the message and every attribute's value
// (strings, errors and anything else as it prints). set is asked at each
// record, so a reloaded configuration's secrets count from the next one;
// it may return nil.
func Handler(h slog.Handler, set func() *Set) slog.Handler {
	return &handler{inner: h, set: set}
}

type handler struct {
	inner slog.Handler
	set   func() *Set
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	s := h.set()
	if s.Empty() {
		return h.inner.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, s.Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(s.attr(a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

// WithAttrs redacts attrs with the secrets of now: the handler under it
// keeps them.
func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	s := h.set()
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = s.attr(a)
	}
	return &handler{inner: h.inner.WithAttrs(red), set: h.set}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{inner: h.inner.WithGroup(name), set: h.set}
}

// attr is a without s's secrets.
func (s *Set) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(s.Text(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, ga := range g {
			red[i] = s.attr(ga)
		}
		a.Value = slog.GroupValue(red...)
	case slog.KindAny:
		// An error, a Stringer, a slice: redacted as it would print; a
		// value that holds no secret stays as it is.
		text := fmt.Sprint(v.Any())
		if red := s.Text(text); red != text {
			a.Value = slog.StringValue(red)
		} else {
			a.Value = v
		}
	default:
		a.Value = v
	}
	return a
}
