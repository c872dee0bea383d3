package engine

import (
	"sync"
	"sync/atomic"
)

// eventBus hands events to subscribers. Each session's events go through
// that session's own sequence lock, so they reach every subscriber in the
// order they were built, and a state or queue event is never overtaken by
// an older view of the same state; events of different sessions never wait
// for each other. No process-wide lock is held while an event is built or
// delivered (docs/lock-order.md).
type eventBus struct {
	// subs is the current subscriber list, replaced whole on every change,
	// so delivering reads it without a lock.
	subs  atomic.Pointer[[]subscriber]
	subMu sync.Mutex // serializes Subscribe and unsubscribe
	subN  int

	// seqs holds one sequence lock per session id that ever emitted. An
	// entry is a few bytes and outlives its session: removing it could let
	// two emitters of one id hold different locks.
	seqs sync.Map // session id -> *sync.Mutex
}

type subscriber struct {
	n  int
	fn func(Event)
}

// Subscribe registers fn for every event; the returned func removes it.
// fn runs on the engine's goroutines, holding the sequence lock of the
// event's session: it must not block, call back into the engine, or do
// expensive work such as encoding a large payload (queue it and encode it
// elsewhere; the rpc front end encodes on its writer goroutine). Events of
// one session reach fn one at a time, in order; events of different
// sessions may reach it concurrently. Payloads share nothing with session
// state (editing one changes no history or timing), but every subscriber
// receives the same payload value, so none may change it.
func (e *Engine) Subscribe(fn func(Event)) (unsubscribe func()) {
	b := &e.events
	b.subMu.Lock()
	defer b.subMu.Unlock()
	b.subN++
	n := b.subN
	b.replace(func(subs []subscriber) []subscriber { return append(subs, subscriber{n, fn}) })
	return func() {
		b.subMu.Lock()
		defer b.subMu.Unlock()
		b.replace(func(subs []subscriber) []subscriber {
			out := subs[:0]
			for _, s := range subs {
				if s.n != n {
					out = append(out, s)
				}
			}
			return out
		})
	}
}

// replace installs edit's result on a copy of the subscriber list; call
// with subMu held.
func (b *eventBus) replace(edit func([]subscriber) []subscriber) {
	var cur []subscriber
	if p := b.subs.Load(); p != nil {
		cur = *p
	}
	next := edit(append([]subscriber(nil), cur...))
	b.subs.Store(&next)
}

// sequencer returns the lock that orders the events of session id.
func (b *eventBus) sequencer(id string) *sync.Mutex {
	if mu, ok := b.seqs.Load(id); ok {
		return mu.(*sync.Mutex)
	}
	mu, _ := b.seqs.LoadOrStore(id, new(sync.Mutex))
	return mu.(*sync.Mutex)
}

func (e *Engine) emit(ev Event) { e.emitWith(ev.SessionID, func() Event { return ev }) }

// emitWith builds an event of session id under that session's sequence
// lock and delivers it to every subscriber before letting go, so an event
// that reports state (a snapshot, the queue) is never overtaken by an
// older view of the same state. Lock order: a session's sequence lock,
// then its mu; nothing emits while holding a session's mu.
func (e *Engine) emitWith(id string, build func() Event) {
	mu := e.events.sequencer(id)
	mu.Lock()
	defer mu.Unlock()
	ev := build()
	p := e.events.subs.Load()
	if p == nil {
		return
	}
	for _, s := range *p {
		s.fn(ev)
	}
}
