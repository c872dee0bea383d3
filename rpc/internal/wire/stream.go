package wire

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Options configure a Stream. The zero value detects the framing, merges
// nothing, and has no EOF hook.
type Options struct {
	// Framing forces a framing; Auto (the default) detects it from input.
	Framing Framing
	// Merger folds a queued notification into the one queued before it
	// while the reader lags (MergeText, for the streams the dialect
	// names). Nil means NoMerge.
	Merger Merger
	// OnEOF runs when input ends (or fails), before ReadObject reports it.
	// The server finishes or aborts running work there and commits; it
	// blocks until that is done. ctx ends when the stream is closed.
	// jsonrpc2.NewConn starts reading at once, so with empty input OnEOF
	// can run before NewConn returns: reach the conn through an atomic.
	OnEOF func(ctx context.Context)
	// DrainTimeout bounds the wait, after OnEOF returns, for replies to the
	// requests already read. Zero means 30s; negative means no limit.
	DrainTimeout time.Duration
	// CloseTimeout bounds how long Close waits for the outbox to flush.
	// Zero means 5s.
	CloseTimeout time.Duration
	// Logf receives diagnostics (rejected frames, dropped responses, write
	// failures). Nil discards them. It must not write to the stream.
	Logf func(format string, args ...any)
}

// Stats counts what went through a Stream.
type Stats struct {
	Written  uint64 // messages written to the output
	Bytes    uint64 // bytes written, framing included
	Merged   uint64 // messages folded into the one before them
	Rejected uint64 // error replies sent for malformed input
	Queued   int    // messages waiting in the outbox now
}

// ErrClosed is returned by WriteObject after Close.
var ErrClosed = errors.New("wire: stream closed")

// Stream is a jsonrpc2.ObjectStream over a reader and a writer. ReadObject
// must be called from one goroutine (jsonrpc2's read loop); WriteObject and
// Close from any.
type Stream struct {
	in   io.Reader
	out  io.Writer
	opts Options
	fr   *frameReader // read goroutine only

	ctx    context.Context // ends at Close; given to OnEOF
	cancel context.CancelFunc

	framingOnce sync.Once
	detected    chan struct{} // closed once framing is known
	closingCh   chan struct{} // closed when Close starts
	wake        chan struct{} // pokes the writer goroutine
	writerDone  chan struct{}

	mu          sync.Mutex
	framing     Framing
	queue       []*Outgoing
	spare       []*Outgoing
	busy        bool // the writer holds a batch not yet flushed
	closing     bool
	werr        error          // first write error; the outbox is dead after it
	outstanding map[string]int // requests returned by ReadObject and not yet answered
	changed     chan struct{}  // closed and replaced whenever the drain state moves
	stats       Stats

	readErr   error // read goroutine only: the error ReadObject keeps returning
	closeOnce sync.Once
	closeErr  error
}

var _ jsonrpc2.ObjectStream = (*Stream)(nil)

// New returns a Stream reading in and writing out. Close closes out and then
// in, each if it is an io.Closer. With Auto framing, output waits until the
// first input bytes tell the framing (a server only speaks after it was
// spoken to); if input ends or the stream closes first, it is NDJSON.
func New(in io.Reader, out io.Writer, opts Options) *Stream {
	if opts.Merger == nil {
		opts.Merger = NoMerge
	}
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = 30 * time.Second
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = 5 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Stream{
		in:          in,
		out:         out,
		opts:        opts,
		ctx:         ctx,
		cancel:      cancel,
		detected:    make(chan struct{}),
		closingCh:   make(chan struct{}),
		wake:        make(chan struct{}, 1),
		writerDone:  make(chan struct{}),
		outstanding: make(map[string]int),
		changed:     make(chan struct{}),
	}
	s.fr = newFrameReader(in, opts.Framing, s.setFraming)
	go s.writeLoop()
	return s
}

func (s *Stream) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

func (s *Stream) setFraming(f Framing) {
	s.framingOnce.Do(func() {
		s.mu.Lock()
		s.framing = f
		s.mu.Unlock()
		close(s.detected)
	})
}

// Framing returns the framing in use, or Auto while it is not known yet.
func (s *Stream) Framing() Framing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.framing
}

// Stats returns the counters so far.
func (s *Stream) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Queued = len(s.queue)
	return st
}

// broadcast wakes everyone waiting for the drain state. Call with mu held.
func (s *Stream) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// ReadObject stores the next well-formed message in v. Malformed input is
// answered on the stream and skipped. At the end of input it runs OnEOF,
// waits until every request it returned has its reply flushed, and only
// then returns the read error (io.EOF at a clean end).
func (s *Stream) ReadObject(v any) error {
	for {
		if s.readErr != nil {
			return s.readErr
		}
		frame, err := s.fr.next()
		for _, msg := range s.fr.takeErrs() {
			s.reject(&rejection{code: ParseError, dataCode: DataParseError, message: msg})
		}
		if err != nil {
			s.readErr = err
			s.drain()
			return err
		}
		if frame == nil {
			continue
		}
		vd := classify(frame)
		if why := s.fr.takeMisframed(); why != "" {
			// The JSON is whole but its frame is not: refuse it, with its id
			// when it is a request, so that the client is not left waiting.
			var id json.RawMessage
			if vd.reject == nil && vd.kind == kindRequest {
				id = idRawOf(frame)
			}
			s.reject(&rejection{id: id, code: ParseError, dataCode: DataParseError, message: why})
			continue
		}
		if vd.reject != nil {
			s.reject(vd.reject)
			continue
		}
		if vd.kind == kindDrop {
			s.logf("wire: dropped %s", vd.why)
			continue
		}
		// jsonrpc2 decodes params into interface{} values and encodes them
		// again (four copies of a 50 MB prompt's text, and its time): it
		// gets the frame without them, and the request its params as they
		// came (keepParams).
		body := frame
		if vd.head != nil {
			body = vd.head
		}
		if err := json.Unmarshal(body, v); err != nil {
			// classify should have caught it; never let jsonrpc2 see it.
			var id json.RawMessage
			if vd.kind == kindRequest {
				id = idRawOf(frame)
			}
			s.reject(invalid(id, err.Error()))
			continue
		}
		if vd.params != nil {
			keepParams(v, vd.params)
		}
		if vd.kind == kindRequest {
			s.mu.Lock()
			s.outstanding[vd.idKey]++
			s.mu.Unlock()
		}
		return nil
	}
}

// keepParams gives the request that jsonrpc2 decoded into v its params as
// the client sent them, a slice of the frame. jsonrpc2 would decode params
// into interface{} values and marshal them again, which replaces invalid
// UTF-8 and unpaired surrogate escapes with U+FFFD: the handlers could no
// longer refuse such text (docs/protocol.md, "Messages the server
// accepts").
func keepParams(v any, params json.RawMessage) {
	req, _, _, ok := unwrapJSONRPC2(v)
	if ok && req != nil {
		req.Params = &params
	}
}

func idRawOf(frame []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(frame, &m) != nil {
		return nil
	}
	if _, ok := idKeyOf(m.ID); !ok {
		return nil
	}
	return m.ID
}

// reject queues the error reply for a frame that will not reach jsonrpc2.
func (s *Stream) reject(r *rejection) {
	s.logf("wire: rejected input: %s", r.message)
	body := encodeErrorReply(r.id, r.code, r.dataCode, r.message)
	s.mu.Lock()
	s.stats.Rejected++
	s.mu.Unlock()
	_ = s.enqueue(&Outgoing{body: body})
}

// drain runs OnEOF, then waits until every request read so far is answered
// and the outbox is empty, the stream closes, output fails, or DrainTimeout.
func (s *Stream) drain() {
	if s.opts.OnEOF != nil {
		s.opts.OnEOF(s.ctx)
	}
	var deadline <-chan time.Time
	if d := s.opts.DrainTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	for {
		s.mu.Lock()
		done := (len(s.outstanding) == 0 && len(s.queue) == 0 && !s.busy) || s.werr != nil || s.closing
		ch, n := s.changed, len(s.outstanding)
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			s.logf("wire: input ended; gave up waiting for replies to %d requests", n)
			return
		}
	}
}

// WriteObject queues obj and returns at once; it never waits for the reader.
// obj is a jsonrpc2 message (as jsonrpc2.Conn passes them), a *Notification
// (encoded later, by the writer) or anything that marshals to a JSON-RPC
// object.
func (s *Stream) WriteObject(obj any) error {
	o, err := newOutgoing(obj)
	if err != nil {
		return err
	}
	return s.enqueue(o)
}

func (s *Stream) enqueue(o *Outgoing) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.werr != nil {
		return s.werr
	}
	if s.closing {
		return ErrClosed
	}
	if n := len(s.queue); n > 0 && o.mergeable() {
		if prev := s.queue[n-1]; prev.mergeable() && s.opts.Merger(prev, o) {
			s.stats.Merged++
			return nil
		}
	}
	s.queue = append(s.queue, o)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// writeLoop drains the outbox in order. It takes the whole queue at once, so
// what arrives while it writes stays queued, and mergeable, until the
// output has taken the batch.
func (s *Stream) writeLoop() {
	defer close(s.writerDone)
	select {
	case <-s.detected:
	case <-s.closingCh:
		s.setFraming(NDJSON) // closed before any input: nothing says otherwise
	}
	framing := s.Framing()
	w := newFrameWriter(s.out, framing)
	for {
		s.mu.Lock()
		for len(s.queue) == 0 {
			if s.closing {
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			<-s.wake
			s.mu.Lock()
		}
		batch := s.queue
		s.queue, s.spare = s.spare[:0], nil
		s.busy = true
		s.mu.Unlock()

		var replied []string
		var written, nbytes uint64
		var err error
		for i, o := range batch {
			batch[i] = nil
			var n int
			var eerr error
			if o.unencoded {
				n, err, eerr = w.writeNotification(o.Method, o.value)
			} else {
				var body []byte
				if body, eerr = o.encode(); eerr == nil {
					n, err = w.write(body)
				}
			}
			if err != nil {
				break
			}
			if eerr != nil {
				s.logf("wire: dropped an outgoing message: %v", eerr)
				continue
			}
			written++
			nbytes += uint64(n)
			if o.replyKey != "" {
				replied = append(replied, o.replyKey)
			}
		}
		if err == nil {
			err = w.flush()
		}

		s.mu.Lock()
		s.busy = false
		s.spare = batch[:0]
		s.stats.Written += written
		s.stats.Bytes += nbytes
		for _, k := range replied {
			if n := s.outstanding[k]; n > 1 {
				s.outstanding[k] = n - 1
			} else {
				delete(s.outstanding, k)
			}
		}
		if err != nil {
			s.werr = err
			s.queue = nil
		}
		s.broadcast()
		s.mu.Unlock()
		if err != nil {
			s.logf("wire: writing output: %v", err)
			return
		}
	}
}

// Close stops accepting writes, waits up to CloseTimeout for the outbox to
// flush, then closes the output and the input.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.broadcast()
		s.mu.Unlock()
		close(s.closingCh)
		select {
		case s.wake <- struct{}{}:
		default:
		}
		t := time.NewTimer(s.opts.CloseTimeout)
		select {
		case <-s.writerDone:
		case <-t.C:
			s.logf("wire: output did not drain within %v; closing anyway", s.opts.CloseTimeout)
		}
		t.Stop()
		s.cancel()
		var errs []error
		if c, ok := s.out.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
		if c, ok := s.in.(io.Closer); ok && !sameObject(s.in, s.out) {
			errs = append(errs, c.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// sameObject reports whether in and out are one value (a net.Conn, say),
// without panicking on incomparable types.
func sameObject(in io.Reader, out io.Writer) bool {
	if reflect.TypeOf(in) != reflect.TypeOf(out) || !reflect.TypeOf(in).Comparable() {
		return false
	}
	return any(in) == any(out)
}
