package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/redact"
)

// Defaults of config.json's "traces" (docs/configuration.md).
const (
	DefaultMaxBytesPerSession = 64 << 20
	DefaultRetentionDays      = 30
	// minSegment keeps rotation from making a file per line when the bound
	// is tiny.
	minSegment = 16 << 10
	// maxPending bounds what waits in memory for a slow or failing disk
	// (besides its largest record); beyond it records are dropped and the
	// trace marked incomplete.
	maxPending = 8 << 20
	// flushDelay gathers the records of a while into one write: a model
	// streams for seconds, a token every few milliseconds, and a write
	// (with what it makes the session's next fsync cost) per 50 ms of it
	// cost more than the records themselves (docs/performance.md,
	// "Traces"). A crash loses at most this much of a trace.
	flushDelay = time.Second
)

const segmentPrefix, segmentSuffix = "trace-", ".jsonl"

// SegmentName is the file name of segment n (1-based).
func SegmentName(n int) string { return fmt.Sprintf("%s%06d%s", segmentPrefix, n, segmentSuffix) }

func segmentNumber(name string) (int, bool) {
	if !strings.HasPrefix(name, segmentPrefix) || !strings.HasSuffix(name, segmentSuffix) {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, segmentPrefix), segmentSuffix))
	return n, err == nil && n > 0
}

// Options configure a Writer.
type Options struct {
	Dir         string // the session's trace directory
	MaxBytes    int64  // bound of all segments together; <= 0 means DefaultMaxBytesPerSession
	SessionID   string
	WorkspaceID string
	Cwd         string
	// Secrets returns the secrets no line may hold (provider keys and
	// other credentials, the configuration's: redact.Set); each is
	// replaced by "[REDACTED]". It may return nil.
	Secrets func() *redact.Set
	// Logger reports a write failure (once per failure streak); nil:
	// stderr.
	Logger *slog.Logger
	FS     FS // nil: the operating system's
	// Now is the clock of every line; nil: time.Now, and a call's events
	// are timed from its start by the monotonic clock alone (one read an
	// event instead of time.Now's two: a stream makes one a token).
	Now func() time.Time
}

// Writer appends records to one session's trace.
type Writer struct {
	o Options

	mu   sync.Mutex
	idle *sync.Cond
	// bufs hold the records waiting for the disk, whole lines in blocks
	// of blockSize (blockPool): a burst, or a session's second of records,
	// grows no slice by copying it, and a new session's writer reuses
	// blocks instead of allocating them.
	bufs     []block
	pending  int  // bytes in bufs
	largest  int  // the largest line in bufs
	flushing bool // a flush is scheduled or running
	timer    *time.Timer
	closed   bool
	lost     int    // records dropped since the last line that reached the disk
	lostWhy  string // why they were dropped
	failing  bool   // the last write failed (a failure is logged once per streak)
	broken   bool   // any record was ever lost: the trace is incomplete
	nextCall int
	// heads are the last request body of each purpose, which the next
	// one's is recorded as a patch of (bodypatch.go).
	heads map[string]*bodyHead
	seqs  map[string]int // requests recorded, by purpose
	// breaks counts the segments closed and the times records were
	// lost: a body recorded before either may not be in the trace (dropped
	// with its segment, or lost itself), so the next is whole.
	breaks atomic.Int64
	// calls are the calls started and not finished: the flusher takes
	// their windows of events (events.go).
	calls map[*Call]struct{}
	// again: a call woke the writer while a flush was running, which may
	// have passed its window already; another flush follows it.
	again bool
	// spare holds the buffers of a finished call for the next one.
	spare *window
	// lastHead is the last request's URL and headers (requestHead).
	lastHead *requestHead
	// config is the configuration this writer recorded last (Config).
	config []byte

	// Owned by the single running flusher (and Close once it is idle).
	f       io.WriteCloser // the current segment, kept open between bursts
	dirLock io.Closer      // the shared flock on Dir the sweep respects (prune.go)
	started bool
	segs    []segment
	total   int64
}

type segment struct {
	n     int
	size  int64
	lines int // records written after the header, by this process
	// torn: a write failed part way through a line, which no newline
	// ends; what comes next goes into a new segment, not onto it.
	torn bool
}

// NewWriter returns a writer for o.Dir. Nothing touches the disk before
// the first record.
func NewWriter(o Options) *Writer {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytesPerSession
	}
	if o.FS == nil {
		o.FS = osFS{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	w := &Writer{o: o}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// now is the time of a line.
func (w *Writer) now() time.Time {
	if w.o.Now != nil {
		return w.o.Now()
	}
	return time.Now()
}

// Dir is the trace's directory.
func (w *Writer) Dir() string { return w.o.Dir }

// NextCall numbers a model call (1, 2, ...).
func (w *Writer) NextCall() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextCall++
	return w.nextCall
}

// Incomplete reports whether any record was lost.
func (w *Writer) Incomplete() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.broken
}

// Add records r, stamped with the time. It never waits for the disk. r is
// encoded before Add returns: the caller may reuse what it points to, but
// for a prompt's text (a string: immutable), which a long line keeps as
// it is until it is written (longline.go).
func (w *Writer) Add(r *Record) {
	r.T = w.now().UnixMilli()
	if v := r.LogicalOf; v != nil {
		r.LogicalOf = nil
		l, err := w.logicalOf(r, v)
		if err != nil {
			w.drop("a record could not be encoded: " + err.Error())
			return
		}
		if l != nil {
			w.mu.Lock()
			w.addLongLocked(l)
			w.mu.Unlock()
			return
		}
	}
	if r.Input != nil && len(r.Input.Text) >= longPart {
		l, err := longPrompt(r)
		if err != nil {
			w.drop("a record could not be encoded: " + err.Error())
			return
		}
		if l != nil {
			w.mu.Lock()
			w.addLongLocked(l)
			w.mu.Unlock()
			return
		}
	}
	head, body, err := encodeParts(r)
	if err != nil {
		w.drop("a record could not be encoded: " + err.Error())
		return
	}
	w.mu.Lock()
	w.addLineLocked(head, body, true)
	w.mu.Unlock()
}

// Config records the configuration that shapes requests (config.json's
// members, encoded), unless it is the one this writer recorded last: a
// process records it before its first step and again after it changed,
// so that a replay asks with the limits the session had (docs/traces.md).
func (w *Writer) Config(cfg []byte) {
	w.mu.Lock()
	same := bytes.Equal(w.config, cfg)
	if !same {
		w.config = cfg
	}
	w.mu.Unlock()
	if !same {
		w.Add(&Record{Type: TypeConfig, Config: cfg})
	}
}

// secrets are the secrets to scrub now; nil scrubs nothing.
func (w *Writer) secrets() *redact.Set {
	if w.o.Secrets == nil {
		return nil
	}
	return w.o.Secrets()
}

// addLine appends a record (encodeParts) to the buffer: a request's body
// is copied once, straight into it. The flusher scrubs it (flush).
func (w *Writer) addLine(head, body []byte) {
	w.mu.Lock()
	w.addLineLocked(head, body, false)
	w.mu.Unlock()
}

// addLineLocked is addLine with w.mu held. With own, head is the caller's
// to give away: a line longer than a block then waits as it is instead
// of being copied into a block of its own.
func (w *Writer) addLineLocked(head, body []byte, own bool) {
	n := len(head) + len(body) + 2
	if w.closed {
		return
	}
	// The largest line waiting is not counted: a single record larger
	// than the bound (a whole body of a history with images), and the
	// records of its second after it, are no sign of a disk falling
	// behind, and a lost request would make the trace unreplayable.
	if w.pending+n-max(w.largest, n) > maxPending {
		w.lost++
		w.broken = true
		w.lostWhy = "the disk fell behind"
		w.breaks.Add(1)
		return
	}
	if own && body == nil && n > blockSize {
		w.bufs = append(w.bufs, block{b: head})
		w.pending += len(head)
	} else {
		last := w.room(n)
		start := len(*last)
		*last = append(*last, head...)
		if body != nil {
			*last = append(*last, body...)
			*last = append(*last, '}', '\n')
		}
		w.pending += len(*last) - start
	}
	w.largest = max(w.largest, n)
	if !w.flushing {
		w.flushing = true
		w.timer = time.AfterFunc(flushDelay, w.flush)
	}
	if n >= writeAtOnce {
		// Batching saves nothing on a line this long, and would hold it
		// (a prompt's text, a whole history's body) for a second more.
		w.flushNowLocked()
	}
}

// addLongLocked is addLineLocked for a line in parts (longline.go).
func (w *Writer) addLongLocked(l *longLine) {
	if w.closed {
		return
	}
	if w.pending+l.size-max(w.largest, l.size) > maxPending {
		w.lost++
		w.broken = true
		w.lostWhy = "the disk fell behind"
		w.breaks.Add(1)
		return
	}
	w.bufs = append(w.bufs, block{long: l})
	w.pending += l.size
	w.largest = max(w.largest, l.size)
	if !w.flushing {
		w.flushing = true
		w.timer = time.AfterFunc(flushDelay, w.flush)
	}
	if l.size >= writeAtOnce {
		w.flushNowLocked()
	}
}

// writeAtOnce is the length from which a line is written without waiting
// for the records of its second.
const writeAtOnce = 1 << 20

// wake schedules a flush, as a record added would, and one more after a
// running one (timer nil): it may have taken the calls' windows before
// the bytes that woke it arrived.
func (w *Writer) wake() {
	w.mu.Lock()
	switch {
	case w.closed:
	case !w.flushing:
		w.flushing = true
		w.timer = time.AfterFunc(flushDelay, w.flush)
	case w.timer == nil:
		w.again = true
	}
	w.mu.Unlock()
}

// drainCalls hands every open window of events to the buffer (no lock
// held: each call's is taken before the writer's).
func (w *Writer) drainCalls() {
	w.mu.Lock()
	calls := make([]*Call, 0, len(w.calls))
	for c := range w.calls {
		calls = append(calls, c)
	}
	w.mu.Unlock()
	for _, c := range calls {
		c.tryEmit()
	}
}

// flushNowLocked starts a scheduled flush at once.
func (w *Writer) flushNowLocked() {
	if w.flushing && w.timer != nil {
		if w.timer.Stop() {
			go w.flush()
		}
		w.timer = nil // running, or about to: its goroutine has started
	}
}

// block is what waits for the disk: whole lines, or one long line in
// parts.
type block struct {
	b    []byte
	long *longLine
}

// head is the start of the block's first line.
func (b block) head() []byte {
	if b.long != nil {
		return b.long.head
	}
	return b.b
}

// blockSize is the size of a buffer block: a few write calls for a
// session's burst, and small enough to keep in a pool.
const blockSize = 64 << 10

var blockPool sync.Pool // *[]byte of capacity blockSize

// room returns the block to append n bytes to (w.mu held).
func (w *Writer) room(n int) *[]byte {
	if k := len(w.bufs); k > 0 && w.bufs[k-1].long == nil && cap(w.bufs[k-1].b)-len(w.bufs[k-1].b) >= n {
		return &w.bufs[k-1].b
	}
	var b []byte
	if p, ok := blockPool.Get().(*[]byte); ok && n <= blockSize {
		b = (*p)[:0]
	} else {
		if ok {
			blockPool.Put(p)
		}
		b = make([]byte, 0, max(n, blockSize))
	}
	w.bufs = append(w.bufs, block{b: b})
	return &w.bufs[len(w.bufs)-1].b
}

func putBlock(b []byte) {
	if cap(b) == blockSize {
		b = b[:0]
		blockPool.Put(&b)
	}
}

func (w *Writer) drop(why string) {
	w.mu.Lock()
	w.breaks.Add(1)
	w.lost++
	w.broken = true
	w.lostWhy = why
	w.mu.Unlock()
}

// encodeLine encodes r as one line.
func encodeLine(r *Record) ([]byte, error) {
	head, body, err := encodeParts(r)
	if err != nil || body == nil {
		return head, err
	}
	return append(append(head, body...), '}', '\n'), nil
}

// encodeParts encodes r: the whole line, or, for a request with a JSON
// body, the line up to the body, and the body, spliced in as is (it is the
// exact JSON that was sent, compact, without a newline), which "}\n" ends.
func encodeParts(r *Record) (head, body []byte, err error) {
	body = r.Body
	if len(body) > 0 && (body[0] != '{' || bytes.IndexByte(body, '\n') >= 0) {
		r.BodyText, r.Body, body = string(body), nil, nil
	}
	if len(body) == 0 {
		body = nil
	}
	r.Body = nil
	var b []byte
	if flat(r) {
		b = appendFlat(make([]byte, 0, 256), r)
	} else {
		// A copy, so that r does not escape: the records a call makes
		// are flat, and stay on their callers' stacks.
		c := *r
		b, err = jsonenc.Append(make([]byte, 0, 256), &c)
	}
	r.Body = body
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		return append(b[:len(b)-1], `,"body":`...), body, nil
	}
	return append(b, '\n'), nil, nil
}

// scrub is line without the writer's secrets, as they are now.
func (w *Writer) scrub(line []byte) []byte { return scrubbed(w.secrets(), line) }

// scrubbed is b without sc's secrets (redact.Set.Scrub).
func scrubbed(sc *redact.Set, b []byte) []byte {
	out, _ := sc.Scrub(b)
	return out
}

// Flush waits until every record added so far was written (or failed).
func (w *Writer) Flush() {
	w.drainCalls()
	w.mu.Lock()
	w.flushNowLocked()
	// A flush that ended by scheduling another (again) wrote every record.
	for w.flushing && w.timer == nil {
		w.idle.Wait()
	}
	w.mu.Unlock()
}

// Close flushes and stops recording.
func (w *Writer) Close() {
	w.drainCalls()
	w.mu.Lock()
	w.closed = true
	w.flushNowLocked()
	for w.flushing {
		w.idle.Wait()
	}
	f, lock := w.f, w.dirLock
	w.f, w.dirLock = nil, nil
	w.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
	if lock != nil {
		_ = lock.Close()
	}
}

// flush writes the buffer until it is empty, without holding the lock
// over I/O.
func (w *Writer) flush() {
	// Running, not scheduled, from before it takes the calls' windows: a
	// call that wakes the writer meanwhile asks for another (wake).
	w.mu.Lock()
	w.timer = nil
	f := w.f
	w.mu.Unlock()
	for {
		w.drainCalls()
		w.mu.Lock()
		if len(w.bufs) == 0 {
			w.f = f
			if w.again && !w.closed {
				w.timer = time.AfterFunc(flushDelay, w.flush)
			} else {
				w.flushing = false
			}
			w.again = false
			w.idle.Broadcast()
			w.mu.Unlock()
			return
		}
		bufs := w.bufs
		w.bufs, w.pending, w.largest = nil, 0, 0
		lost, why := w.lost, w.lostWhy
		w.mu.Unlock()

		var err error
		if lost > 0 {
			// Stamped as the record it heads: the flush is a flush delay
			// later than the records it writes.
			note, _ := encodeLine(&Record{Type: TypeIncomplete, T: w.timeOf(bufs[0].head()), Reason: fmt.Sprintf("%d records lost: %s", lost, why)})
			f, err = w.writeChunk(f, w.scrub(note))
		}
		// Every line is scrubbed here, a block at a time, before it is
		// written: one search of 64 KiB is far cheaper than one per line,
		// and no line spans two blocks (room).
		sc := w.secrets()
		for _, b := range bufs {
			if err != nil {
				break
			}
			if b.long != nil {
				f, err = w.writeLong(f, sc, b.long)
			} else {
				f, err = w.writeChunk(f, scrubbed(sc, b.b))
			}
		}
		records := 0
		for _, b := range bufs {
			if err != nil {
				records += bytes.Count(b.b, []byte{'\n'}) + b.long.lines()
			}
			putBlock(b.b)
		}

		w.mu.Lock()
		report := false
		if err != nil {
			w.broken = true
			// The chunk is gone; its records are counted as lost so that
			// the next line that lands says so.
			w.lost += records
			w.lostWhy = err.Error()
			w.breaks.Add(1)
			if !w.failing {
				w.failing = true
				report = true
			}
			if f != nil {
				_ = f.Close()
				f = nil
			}
		} else {
			w.failing = false
			w.lost -= lost
		}
		w.mu.Unlock()
		if report {
			// Not under w.mu: a log is I/O.
			w.o.Logger.Error("trace write failed; the trace is incomplete", "dir", w.o.Dir, "err", err)
		}
	}
}

func (w *Writer) segmentMax() int64 {
	return max(w.o.MaxBytes/4, min(w.o.MaxBytes, minSegment))
}

// writeChunk appends whole lines to the current segment, rotating and
// dropping the oldest segments to stay within the bound.
func (w *Writer) writeChunk(f io.WriteCloser, chunk []byte) (io.WriteCloser, error) {
	if !w.started {
		if err := w.start(); err != nil {
			return nil, err
		}
	}
	for len(chunk) > 0 {
		cur := &w.segs[len(w.segs)-1]
		if cur.torn {
			var err error
			if f, err = w.leaveTorn(f); err != nil {
				return nil, err
			}
			continue
		}
		// Lines up to the segment's limit; at least one line per segment
		// so that a huge line still lands.
		n, size := 0, cur.size
		if size+int64(len(chunk)) <= w.segmentMax() {
			n = len(chunk) // the usual case: it all fits, no need to look for lines
		}
		for n < len(chunk) {
			i := bytes.IndexByte(chunk[n:], '\n') + 1
			if i == 0 {
				i = len(chunk) - n
			}
			if size+int64(i) > w.segmentMax() && (n > 0 || cur.lines > 0) {
				break
			}
			n += i
			size += int64(i)
		}
		if n == 0 {
			if f != nil {
				_ = f.Close()
				f = nil
			}
			if err := w.rotate(); err != nil {
				return nil, err
			}
			continue
		}
		if f == nil {
			var err error
			f, err = w.openSegment(cur, chunk)
			if err != nil {
				return nil, err
			}
			continue
		}
		m, err := f.Write(chunk[:n])
		cur.size += int64(m)
		cur.lines++
		w.total += int64(m)
		if err != nil {
			cur.torn = m > 0
			return f, fmt.Errorf("write %s: %w", SegmentName(cur.n), err)
		}
		chunk = chunk[n:]
	}
	return f, nil
}

// leaveTorn closes f and starts the next segment after a torn one.
func (w *Writer) leaveTorn(f io.WriteCloser) (io.WriteCloser, error) {
	if f != nil {
		_ = f.Close()
	}
	return nil, w.rotate()
}

// start reads the segments an earlier process left and begins a new one.
func (w *Writer) start() error {
	// One mkdir in the usual case, a new session's trace (MkdirAll would
	// stat the path and its parent first); a directory made here is empty,
	// so it needs no reading for the next segment number.
	created := false
	mkdir := func() error {
		err := w.o.FS.Mkdir(w.o.Dir, 0o700)
		if errors.Is(err, fs.ErrNotExist) {
			if err = w.o.FS.MkdirAll(filepath.Dir(w.o.Dir), 0o700); err == nil {
				err = w.o.FS.Mkdir(w.o.Dir, 0o700)
			}
		}
		created = err == nil
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create trace directory: %w", err)
		}
		return nil
	}
	if w.dirLock == nil {
		lock, err := holdDir(w.o.Dir, mkdir)
		if err != nil {
			return err
		}
		w.dirLock = lock
	}
	if created {
		w.segs, w.total, w.started = []segment{{n: 1}}, 0, true
		return nil
	}
	entries, err := w.o.FS.ReadDir(w.o.Dir)
	if err != nil {
		return fmt.Errorf("read trace directory: %w", err)
	}
	w.segs, w.total = nil, 0
	for _, e := range entries {
		n, ok := segmentNumber(e.Name())
		if !ok {
			continue
		}
		var size int64
		if info, err := e.Info(); err == nil {
			size = info.Size()
		}
		w.segs = append(w.segs, segment{n: n, size: size})
		w.total += size
	}
	sort.Slice(w.segs, func(i, j int) bool { return w.segs[i].n < w.segs[j].n })
	next := 1
	if len(w.segs) > 0 {
		next = w.segs[len(w.segs)-1].n + 1
	}
	w.segs = append(w.segs, segment{n: next})
	w.started = true
	return nil
}

// rotate starts the next segment and removes the oldest ones beyond the
// bound (never the one being written).
func (w *Writer) rotate() error {
	w.breaks.Add(1)
	next := w.segs[len(w.segs)-1].n + 1
	w.segs = append(w.segs, segment{n: next})
	for len(w.segs) > 1 && w.total+w.segmentMax() > w.o.MaxBytes {
		old := w.segs[0]
		if err := w.o.FS.Remove(filepath.Join(w.o.Dir, SegmentName(old.n))); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove old segment: %w", err)
		}
		w.segs = w.segs[1:]
		w.total -= old.size
	}
	return nil
}

// openSegment opens a segment for appending; a new one starts with its
// header line, stamped as first, the line it heads.
func (w *Writer) openSegment(s *segment, first []byte) (io.WriteCloser, error) {
	f, err := w.o.FS.OpenFile(filepath.Join(w.o.Dir, SegmentName(s.n)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open trace segment: %w", err)
	}
	if s.size == 0 {
		hdr, _ := encodeLine(&Record{Type: TypeTrace, T: w.timeOf(first), Version: Version,
			SessionID: w.o.SessionID, WorkspaceID: w.o.WorkspaceID, Cwd: w.o.Cwd, Segment: s.n})
		hdr = w.scrub(hdr)
		m, err := f.Write(hdr)
		s.size += int64(m)
		w.total += int64(m)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("write trace header: %w", err)
		}
	}
	return f, nil
}

// timeOf is the time of the encoded line that starts b, for a line
// written ahead of it (a segment's header, an incomplete record): they are
// written by the flusher, a flush delay after the records they head were
// made, and stamped with the time of the write they would read as a
// second later than those. Every record's encoding starts with its type
// and its time (Record's first members); now when b holds no line.
func (w *Writer) timeOf(b []byte) int64 {
	const key = `","t":`
	head := b[:min(len(b), 64)]
	if i := bytes.Index(head, []byte(key)); i >= 0 && bytes.HasPrefix(head, []byte(`{"type":"`)) {
		digits := b[i+len(key):]
		t, n := int64(0), 0
		for n < len(digits) && n < 19 && digits[n] >= '0' && digits[n] <= '9' {
			t = t*10 + int64(digits[n]-'0')
			n++
		}
		if n > 0 {
			return t
		}
	}
	return w.now().UnixMilli()
}

// appendJSONString appends s as a JSON string, as jsonenc writes it
// (jsonenc.AppendString). A long string (a prompt's text) gets room for
// exactly what it becomes and some for the rest of its record, so that
// the record is not copied to grow by a few bytes.
func appendJSONString(out []byte, s []byte) []byte {
	if len(s) > longString {
		out = slices.Grow(out, jsonenc.QuotedLen(s)+longStringSlack)
	}
	return jsonenc.AppendString(out, s)
}

// longString is the length from which appendJSONString makes room for a
// string before encoding it; longStringSlack is the room it leaves after
// it for the rest of the record.
const (
	longString      = 64 << 10
	longStringSlack = 1 << 10
)
