package main

import (
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/loopdev/loop/engine"
)

// A long-lived process (the server, the chat) gives the operating system
// back what a large one-off left mapped: a 50 MB prompt, or a reply or a
// tool result of that size, grows the heap to a few times its size while
// it is read, recorded, saved and sent, and the collector's goal, set
// while those copies were live, lets the process keep it until far more
// has been allocated. Once a run has settled and the process has been
// quiet for a moment (its notifications written, its trace flushed), if
// the heap holds spareToReturn more than it did after the last return,
// the memory is collected and returned (debug.FreeOSMemory): the process
// is back near what its sessions hold (docs/performance.md, "One large
// prompt").

const (
	// returnDelay is the quiet after a run settles before the heap is
	// looked at.
	returnDelay = time.Second
	// spareToReturn is how much the heap must have grown since the last
	// return for a collection to be worth it.
	spareToReturn = 64 << 20
)

// memoryReturner returns memory after large runs; see above.
type memoryReturner struct {
	mu    sync.Mutex
	timer *time.Timer
	floor uint64 // the heap after the last return
	// heap reads the heap's mapped bytes; free returns memory. Tests
	// replace them.
	heap func() uint64
	free func()
}

// returnMemoryAfterRuns starts returning memory after eng's runs settle;
// the function it returns stops it.
func returnMemoryAfterRuns(eng *engine.Engine) (stop func()) {
	m := &memoryReturner{heap: mappedHeap, free: debug.FreeOSMemory}
	m.floor = m.heap()
	unsubscribe := eng.Subscribe(func(ev engine.Event) {
		if ev.Kind == engine.EventAgentSettled {
			m.settled()
		}
	})
	return func() {
		unsubscribe()
		m.mu.Lock()
		if m.timer != nil {
			m.timer.Stop()
		}
		m.mu.Unlock()
	}
}

// settled (re)starts the quiet period; it runs under the engine's event
// lock, so it only sets a timer.
func (m *memoryReturner) settled() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timer = time.AfterFunc(returnDelay, m.check)
}

// check returns the memory when the heap grew by spareToReturn since the
// last return.
func (m *memoryReturner) check() {
	m.mu.Lock()
	floor := m.floor
	m.mu.Unlock()
	if m.heap() < floor+spareToReturn {
		return
	}
	m.free() // a collection: no lock held, settled must not wait for it
	after := m.heap()
	m.mu.Lock()
	m.floor = after
	m.mu.Unlock()
}

// mappedHeap is the heap the process holds from the operating system:
// objects (live, or dead and not yet swept), and the free and unused
// parts of its spans not returned yet. It is read with
// runtime.ReadMemStats, not runtime/metrics, whose package initialisation
// builds its table of descriptions (15 KB, 95 allocations) in every
// process, the server's start included, for a figure read once a run has
// settled (docs/performance.md, "Start-up").
func mappedHeap() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapSys - ms.HeapReleased
}
