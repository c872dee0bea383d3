package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// frameReader cuts the input into candidate message bodies. It never judges
// the JSON itself (classify does) except where framing depends on it: an
// NDJSON value spanning lines, and an LSP body that swallowed the next header.
type frameReader struct {
	br      *bufio.Reader
	framing Framing // Auto until the first bytes arrive
	// detected is called once, when the framing becomes known.
	detected func(Framing)

	// errs holds framing errors found while looking for the next frame; each
	// becomes one parse-error reply before the frame that follows it.
	errs []string
	err  error // sticky read error, reported after the last frame

	// NDJSON: a value spread over several lines, kept until it closes.
	acc     []byte
	scan    depthScanner
	checked int // len(acc) when it was last checked to be a valid prefix

	// LSP: after a bad header, skip input until the next Content-Length.
	resync bool
	// misframed explains why the frame next returned is to be refused
	// although its JSON is whole: its Content-Length was too long.
	misframed string
}

// MaxContentLength is the largest LSP body accepted: 1 GiB. A header that
// declares more is refused at once, before any of its body is read, so that
// a corrupt length cannot swallow all later input waiting for bytes that
// will never come. No message that can do anything is near it: prompts have
// no limit of their own (docs/protocol.md 2.2), but images are capped at
// 3 MiB, and text and files must fit a model's context window, which
// model providers' request size limits bound in the tens of MiB.
const MaxContentLength = 1 << 30

// takeMisframed returns and forgets the reason the last frame is refused.
func (r *frameReader) takeMisframed() string {
	m := r.misframed
	r.misframed = ""
	return m
}

const readBufSize = 64 << 10

func newFrameReader(r io.Reader, f Framing, detected func(Framing)) *frameReader {
	fr := &frameReader{br: bufio.NewReaderSize(r, readBufSize), framing: f, detected: detected}
	if f != Auto {
		detected(f)
	}
	return fr
}

// takeErrs returns and forgets the framing errors found so far.
func (r *frameReader) takeErrs() []string {
	e := r.errs
	r.errs = nil
	return e
}

func (r *frameReader) fail(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// next returns the next candidate body. Framing errors met on the way are in
// takeErrs afterwards, also when next returns an error. A nil body with a
// nil error means there were only errors so far: they are reported at once,
// since the next frame may be a while coming.
func (r *frameReader) next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.framing == Auto {
		if err := r.detect(); err != nil {
			r.err = err
			return nil, err
		}
	}
	if r.framing == LSP {
		return r.nextLSP()
	}
	return r.nextNDJSON()
}

const (
	contentLength = "content-length:"
	contentType   = "content-type:"
)

// detect skips leading whitespace and looks at the first bytes. It peeks one
// byte at a time so that a short NDJSON request is never held back waiting
// for 15 bytes that may not come.
func (r *frameReader) detect() error {
	for {
		b, err := r.br.Peek(1)
		if err != nil {
			// Nothing but whitespace: answer in NDJSON if anything is ever sent.
			r.setFraming(NDJSON)
			return err
		}
		if !isSpace(b[0]) {
			break
		}
		r.br.Discard(1)
	}
	f := LSP
	for i := 1; i <= len(contentLength); i++ {
		b, err := r.br.Peek(i)
		if err != nil || lower(b[i-1]) != contentLength[i-1] {
			f = NDJSON
			break
		}
	}
	r.setFraming(f)
	return nil
}

func (r *frameReader) setFraming(f Framing) {
	r.framing = f
	r.detected(f)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// indexFold finds the ASCII-case-insensitive needle (given in lower case).
func indexFold(s []byte, needle string) int {
	n := len(needle)
	for i := 0; i+n <= len(s); i++ {
		if lower(s[i]) != needle[0] {
			continue
		}
		j := 1
		for j < n && lower(s[i+j]) == needle[j] {
			j++
		}
		if j == n {
			return i
		}
	}
	return -1
}

// pushBack makes b the next input, ahead of what is still buffered.
func (r *frameReader) pushBack(b []byte) {
	rest := append([]byte(nil), b...)
	r.br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(rest), r.br), readBufSize)
}

// nextLSP reads one header block and its body. Headers end in \r\n or a bare
// \n, names are case-insensitive, and headers other than Content-Length are
// ignored. A broken header block costs one error, then input is skipped up to
// the next Content-Length header.
func (r *frameReader) nextLSP() ([]byte, error) {
	for {
		length, err := r.readHeaders()
		if err != nil {
			return nil, err
		}
		if length == -1 {
			r.fail("parse error: header block without Content-Length")
			r.resync = true
		}
		if length < 0 {
			// Report now: the next frame may be a while coming.
			return nil, nil
		}
		return r.readBody(length)
	}
}

// readHeaders reads one header block and returns its Content-Length, -1
// when the block had none, or -2 after a broken header line (reported, and
// resync set).
func (r *frameReader) readHeaders() (int64, error) {
	length := int64(-1)
	inHeaders := false
	for {
		line, err := r.br.ReadBytes('\n')
		if err != nil {
			if len(bytes.TrimSpace(line)) > 0 && !r.resync {
				r.fail("parse error: input ended inside a header block")
			} else if inHeaders {
				r.fail("parse error: input ended before the body")
			}
			r.err = err
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if r.resync {
			i := indexFold(line, contentLength)
			if i < 0 {
				continue
			}
			line, r.resync = line[i:], false
		}
		if len(bytes.TrimSpace(line)) == 0 {
			if !inHeaders {
				continue // blank lines between frames are harmless
			}
			break
		}
		if i := indexFold(line, contentLength); i > 0 && !isHeaderLine(line[:i]) {
			// Stray bytes glued to a header (a short Content-Length leaves the
			// end of the previous body here): report them, keep the header.
			r.fail("parse error: unexpected bytes before Content-Length header: %q", clip(line[:i]))
			line = line[i:]
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || !isHeaderLine(line) {
			r.fail("parse error: malformed header line %q", clip(line))
			r.resync = true
			return -2, nil
		}
		inHeaders = true
		if !strings.EqualFold(string(bytes.TrimSpace(name)), "Content-Length") {
			continue
		}
		n, perr := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
		if perr != nil || n < 0 {
			r.fail("parse error: invalid Content-Length %q", clip(bytes.TrimSpace(value)))
			r.resync = true
			return -2, nil
		}
		if n > MaxContentLength {
			r.fail("parse error: Content-Length %d is larger than the limit of %d bytes", n, MaxContentLength)
			r.resync = true
			return -2, nil
		}
		length = n
	}
	return length, nil
}

// readBody reads an LSP body of the given length.
func (r *frameReader) readBody(length int64) ([]byte, error) {
	var body bytes.Buffer
	// Grow only as data arrives, so a lying header costs what was really sent.
	body.Grow(int(min(length, readBufSize)))
	if _, err := io.CopyN(&body, r.br, length); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		r.fail("parse error: input ended %d bytes into a %d-byte body", body.Len(), length)
		r.err = err
		return nil, err
	}
	b := body.Bytes()
	if b == nil {
		b = []byte{} // nil would mean "no frame" to ReadObject
	}
	if !json.Valid(b) {
		// A Content-Length that was too large swallowed the start of the
		// next frame: hand that part back so only this frame is lost.
		if i := nextHeaderIn(b); i >= 0 {
			r.pushBack(b[i:])
			r.misframed = fmt.Sprintf("parse error: Content-Length %d is longer than the message, which ends at byte %d", length, i)
			return b[:i], nil
		}
		if i := indexFold(b, contentLength); i >= 0 {
			r.pushBack(b[i:])
			b = b[:i]
		} else if i := cutHeaderAtEnd(b); i >= 0 {
			r.pushBack(b[i:])
			b = b[:i]
		}
	}
	return b, nil
}

// cutHeaderAtEnd finds, at the end of a broken body, the first bytes of the
// next frame's first header ("C" up to "Content-Length"), which a
// Content-Length too long by fewer bytes than "Content-Length:" leaves
// there. It returns -1 when the body does not end so.
func cutHeaderAtEnd(b []byte) int {
	for k := min(len(b), len(contentLength)-1); k > 0; k-- {
		tail := string(b[len(b)-k:])
		for _, name := range []string{contentLength, contentType} {
			if k < len(name) && strings.EqualFold(tail, name[:k]) {
				return len(b) - k
			}
		}
	}
	return -1
}

// nextHeaderIn finds where the next frame starts inside a body that is one
// JSON value followed by the beginning of a header block: what a
// Content-Length too long by a few bytes reads. The next header may be cut
// anywhere, down to its first letter ("C", "Content-Len"), so a search for
// the whole "Content-Length:" would miss it and resynchronisation would
// skip the next frame. Only the two headers LSP defines count, so trailing
// garbage is not taken for a header. It returns -1 when b is not such a body.
func nextHeaderIn(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	if dec.Decode(&v) != nil {
		return -1
	}
	i := int(dec.InputOffset())
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == len(b) {
		return -1
	}
	for _, name := range []string{contentLength, contentType} {
		n := min(len(b)-i, len(name))
		if strings.EqualFold(string(b[i:i+n]), name[:n]) {
			return i
		}
	}
	return -1
}

// nextNDJSON returns the next JSON value. A value opening with { or [ may
// span lines: lines are added until its brackets balance. A line that is
// itself a complete JSON-RPC message while a value is still open means the
// open value was truncated: it is reported and the line starts afresh.
func (r *frameReader) nextNDJSON() ([]byte, error) {
	for {
		line, err := r.br.ReadBytes('\n')
		if len(line) > 0 {
			if f, ok := r.feedLine(line); ok {
				if err != nil {
					r.err = err
				}
				return f, nil
			}
		}
		if err != nil {
			if len(r.acc) > 0 {
				r.fail("parse error: input ended inside a JSON value")
				r.acc = nil
			}
			r.err = err
			return nil, err
		}
	}
}

func (r *frameReader) feedLine(line []byte) ([]byte, bool) {
	t := bytes.TrimSpace(line)
	if len(r.acc) == 0 {
		if len(t) == 0 {
			return nil, false
		}
		if t[0] != '{' && t[0] != '[' {
			return t, true // a scalar or garbage: classify decides which
		}
		r.scan = depthScanner{}
		if r.scan.feed(t) || !validPrefix(t) {
			return t, true
		}
		r.acc = append(append(r.acc[:0], t...), '\n')
		r.checked = len(r.acc)
		return nil, false
	}
	if looksLikeMessage(t) {
		r.fail("parse error: incomplete JSON value before the next message")
		r.acc = r.acc[:0]
		return r.feedLine(line)
	}
	r.acc = append(r.acc, t...)
	// Garbage that opened with a bracket must not swallow the lines after
	// it. Checking the whole prefix at every line would be quadratic, so
	// big values are checked each time they double.
	closed := r.scan.feed(t)
	if !closed && (len(r.acc) < 64<<10 || len(r.acc) >= 2*r.checked) {
		if closed = !validPrefix(r.acc); !closed {
			r.checked = len(r.acc)
		}
	}
	if closed {
		f := r.acc
		r.acc = nil
		return f, true
	}
	r.acc = append(r.acc, '\n')
	return nil, false
}

// validPrefix reports whether b could still grow into one valid JSON value.
func validPrefix(b []byte) bool {
	var raw json.RawMessage
	err := json.NewDecoder(bytes.NewReader(b)).Decode(&raw)
	return err == nil || err == io.ErrUnexpectedEOF
}

// looksLikeMessage reports whether a line is a whole JSON object with a
// top-level "jsonrpc" member, which a line inside a pretty-printed message
// practically never is.
func looksLikeMessage(t []byte) bool {
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' || !bytes.Contains(t, []byte(`"jsonrpc"`)) {
		return false
	}
	var m struct {
		JSONRPC *json.RawMessage `json:"jsonrpc"`
	}
	return json.Unmarshal(t, &m) == nil && m.JSONRPC != nil
}

// depthScanner tracks bracket depth across lines, outside strings.
type depthScanner struct {
	depth            int
	inString, escape bool
}

// feed scans one line and reports whether the value is finished: its
// brackets closed, or it cannot be valid any more (a string cannot span
// lines). Trailing bytes after the close are left for classify to reject.
func (s *depthScanner) feed(b []byte) bool {
	for _, c := range b {
		if s.inString {
			switch {
			case s.escape:
				s.escape = false
			case c == '\\':
				s.escape = true
			case c == '"':
				s.inString = false
			}
			continue
		}
		switch c {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
			if s.depth <= 0 {
				return true
			}
		}
	}
	return s.inString
}

// isHeaderLine reports whether b starts with "Name:", a header name being
// an HTTP token; the tail of a JSON body never does.
func isHeaderLine(b []byte) bool {
	name, _, ok := bytes.Cut(b, []byte(":"))
	name = bytes.TrimSpace(name)
	if !ok || len(name) == 0 {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// clip shortens input quoted in an error message.
func clip(b []byte) []byte {
	const max = 80
	if len(b) > max {
		return append(append([]byte(nil), b[:max]...), "..."...)
	}
	return b
}
