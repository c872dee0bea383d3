package rpctest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// message is one frame the server wrote.
type message struct {
	raw    json.RawMessage
	id     json.RawMessage // nil when absent
	method string
	params json.RawMessage
	result json.RawMessage
	err    json.RawMessage
}

func (m *message) isResponse() bool { return m.method == "" }
func (m *message) isRequest() bool  { return m.method != "" && m.id != nil }

func parseMessage(b []byte) (*message, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	m := &message{raw: append(json.RawMessage(nil), b...), id: f["id"], params: f["params"], result: f["result"], err: f["error"]}
	if raw, ok := f["method"]; ok {
		if err := json.Unmarshal(raw, &m.method); err != nil || m.method == "" {
			return nil, fmt.Errorf("method is not a non-empty string")
		}
	} else if m.result == nil && m.err == nil {
		return nil, errors.New("neither a request, a notification nor a response")
	}
	return m, nil
}

// entry is a received message that no call claimed: a notification, a
// request from the server, or a response nobody waits for (id null).
type entry struct {
	msg      *message
	consumed bool // taken by a wait
	printed  bool // shown by transcript -new
	answered bool // a server request that got its answer
}

// answer is a canned reply to a server->client request.
type answer struct {
	result json.RawMessage
	err    json.RawMessage
}

// server is one process the script talks to.
type server struct {
	name   string
	lsp    bool
	record recorder // nil unless the script records (Record)
	cmd    *exec.Cmd
	stderr syncBuffer

	out chan []byte // frames for stdin, in order; closed by closeStdin

	exited  chan struct{} // closed when the process has exited
	waitErr error         // cmd.Wait's result, once exited

	readDone chan struct{} // closed when stdout has ended

	mu          sync.Mutex
	changed     chan struct{} // closed and replaced on every change below
	nextID      int64
	pending     map[string]chan *message
	log         []*entry
	canned      map[string][]answer
	always      map[string]answer
	protoErrs   []string // frames the server should never have written
	readErr     error
	writeErr    error
	stdinClosed bool
	signalled   bool // rpc kill sent a signal: stop waits before closing stdin
}

// start launches the server with stdin and stdout on pipes of our own, so
// that cmd.Wait never races with the reader.
func start(name string, lsp bool, path string, args, env []string, dir string, rec recorder) (*server, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	s := &server{
		name:     name,
		lsp:      lsp,
		record:   rec,
		out:      make(chan []byte, 1024),
		exited:   make(chan struct{}),
		readDone: make(chan struct{}),
		changed:  make(chan struct{}),
		pending:  make(map[string]chan *message),
		canned:   make(map[string][]answer),
		always:   make(map[string]answer),
	}
	s.cmd = exec.Command(path, args...)
	s.cmd.Env = env
	s.cmd.Dir = dir
	s.cmd.Stdin = inR
	s.cmd.Stdout = outW
	s.cmd.Stderr = &s.stderr
	// A grandchild holding stderr open must not hang Wait.
	s.cmd.WaitDelay = 5 * time.Second
	err = s.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	go func() {
		err := s.cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.broadcast()
		s.mu.Unlock()
		close(s.exited)
	}()
	go s.writeLoop(inW)
	go s.readLoop(outR)
	return s, nil
}

func (s *server) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// writeLoop feeds stdin. The channel keeps writes from blocking a command
// while the server is busy; a server that stops reading for longer than
// the channel holds blocks the command, which its timeout then reports.
func (s *server) writeLoop(w *os.File) {
	defer w.Close()
	for b := range s.out {
		if _, err := w.Write(b); err != nil {
			s.mu.Lock()
			if s.writeErr == nil {
				s.writeErr = err
			}
			s.broadcast()
			s.mu.Unlock()
			for range s.out {
			}
			return
		}
	}
}

// send queues bytes for stdin.
func (s *server) send(b []byte, timeout time.Duration) error {
	s.mu.Lock()
	closed, werr := s.stdinClosed, s.writeErr
	s.mu.Unlock()
	if closed {
		return errors.New("stdin is already closed")
	}
	if werr != nil {
		return fmt.Errorf("writing to stdin failed earlier: %w", werr)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case s.out <- b:
		return nil
	case <-t.C:
		return fmt.Errorf("stdin blocked for %v: the server is not reading", timeout)
	}
}

func (s *server) closeStdin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stdinClosed {
		s.stdinClosed = true
		close(s.out)
	}
}

func (s *server) readLoop(r *os.File) {
	defer close(s.readDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		b, err := readFrame(br, s.lsp)
		if err != nil {
			s.mu.Lock()
			if err != io.EOF {
				s.protoErrs = append(s.protoErrs, err.Error())
			}
			s.readErr = err
			for k, ch := range s.pending {
				close(ch)
				delete(s.pending, k)
			}
			s.broadcast()
			s.mu.Unlock()
			return
		}
		s.record.frame(true, false, b)
		m, perr := parseMessage(b)
		s.mu.Lock()
		if perr != nil {
			s.protoErrs = append(s.protoErrs, fmt.Sprintf("%v: %s", perr, clip(b)))
		} else {
			s.dispatch(m)
		}
		s.broadcast()
		s.mu.Unlock()
	}
}

// dispatch files one message. Called with mu held, on the read goroutine,
// so everything it records is in wire order.
func (s *server) dispatch(m *message) {
	if m.isResponse() {
		key := string(bytes.TrimSpace(m.id))
		if ch, ok := s.pending[key]; ok {
			delete(s.pending, key)
			ch <- m
			return
		}
	}
	e := &entry{msg: m}
	s.log = append(s.log, e)
	if m.isRequest() {
		if a, ok := s.nextAnswer(m.method); ok {
			s.reply(e, a)
		}
	}
}

// nextAnswer pops the canned answer for a method. Called with mu held.
func (s *server) nextAnswer(method string) (answer, bool) {
	if q := s.canned[method]; len(q) > 0 {
		s.canned[method] = q[1:]
		return q[0], true
	}
	a, ok := s.always[method]
	return a, ok
}

// reply answers a server request. Called with mu held; never blocks, so
// the read loop keeps reading.
func (s *server) reply(e *entry, a answer) {
	e.answered = true
	body := `{"jsonrpc":"2.0","id":` + string(e.msg.id)
	if a.err != nil {
		body += `,"error":` + string(a.err) + `}`
	} else {
		body += `,"result":` + string(a.result) + `}`
	}
	if s.stdinClosed || s.writeErr != nil {
		return
	}
	s.record.frame(false, false, []byte(body))
	select {
	case s.out <- frame(s.lsp, []byte(body)):
	default:
		// The stdin queue is full: hand it to a goroutine rather than
		// stalling the reader. Order among answers is kept by the queue
		// being full only when the server has stopped reading anyway.
		go func(b []byte) {
			defer func() { recover() }() // stdin closed meanwhile
			s.out <- b
		}(frame(s.lsp, []byte(body)))
	}
}

// respond answers the oldest waiting request of method, or keeps the answer
// for the next one (or for every one, if always).
func (s *server) respond(method string, a answer, always bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	answeredOne := false
	for _, e := range s.log {
		if e.msg.isRequest() && e.msg.method == method && !e.answered {
			s.reply(e, a)
			answeredOne = true
			if !always {
				return
			}
		}
	}
	if always {
		s.always[method] = a
	} else if !answeredOne {
		s.canned[method] = append(s.canned[method], a)
	}
}

// call sends a request and waits for its response.
func (s *server) call(method string, params json.RawMessage, timeout time.Duration) (*message, error) {
	s.mu.Lock()
	if s.readErr != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("cannot call %s: %s", method, s.why())
	}
	s.nextID++
	id := s.nextID
	key := strconv.FormatInt(id, 10)
	ch := make(chan *message, 1)
	s.pending[key] = ch
	s.mu.Unlock()
	body := request(id, method, params)
	s.record.frame(false, false, body)
	if err := s.send(frame(s.lsp, body), timeout); err != nil {
		s.mu.Lock()
		delete(s.pending, key)
		s.mu.Unlock()
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("no reply to %s (id %d): %s", method, id, s.why())
		}
		return m, nil
	case <-t.C:
		s.mu.Lock()
		delete(s.pending, key)
		s.mu.Unlock()
		return nil, fmt.Errorf("no reply to %s (id %d) within %v (%s)", method, id, timeout, s.state())
	}
}

func request(id int64, method string, params json.RawMessage) []byte {
	m, _ := json.Marshal(method)
	b := []byte(`{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":` + string(m))
	if params != nil {
		b = append(append(b, `,"params":`...), params...)
	}
	return append(b, '}')
}

func notification(method string, params json.RawMessage) []byte {
	m, _ := json.Marshal(method)
	b := []byte(`{"jsonrpc":"2.0","method":` + string(m))
	if params != nil {
		b = append(append(b, `,"params":`...), params...)
	}
	return append(b, '}')
}

// why explains a stdout that ended.
func (s *server) why() string {
	s.mu.Lock()
	err := s.readErr
	s.mu.Unlock()
	if err == io.EOF {
		return "the server closed its stdout (" + s.state() + ")"
	}
	return fmt.Sprintf("reading the server's stdout: %v (%s)", err, s.state())
}

// state describes the process for failure messages.
func (s *server) state() string {
	select {
	case <-s.exited:
		return "server " + exitText(s.cmd.ProcessState)
	default:
		return "server still running"
	}
}

func exitText(ps *os.ProcessState) string {
	if ps == nil {
		return "not started"
	}
	return "exited: " + ps.String()
}

// tail is the end of stderr, for failure messages.
func (s *server) tail() string {
	b := s.stderr.String()
	const max = 2000
	if len(b) > max {
		b = "..." + b[len(b)-max:]
	}
	if b == "" {
		return "(stderr empty)"
	}
	return "stderr:\n" + strings.TrimRight(b, "\n")
}

// kill stops the process for good, for cleanup.
func (s *server) kill() {
	s.closeStdin()
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
}

// syncBuffer collects stderr while commands read it.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced at every write
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.buf.Write(p)
}

// snapshot returns the text so far and a channel closed at the next write.
func (b *syncBuffer) snapshot() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.buf.String(), b.changed
}

func (b *syncBuffer) String() string {
	s, _ := b.snapshot()
	return s
}

func clip(b []byte) string {
	const max = 200
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}
