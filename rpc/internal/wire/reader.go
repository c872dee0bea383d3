package wire

import (
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
	in      *input
	framing Framing // Auto until the first bytes arrive
	// detected is called once, when the framing becomes known.
	detected func(Framing)

	// errs holds framing errors found while looking for the next frame; each
	// becomes one parse-error reply before the frame that follows it.
	errs []string
	err  error // sticky read error, reported after the last frame

	// scan checks the JSON of the value being read as its bytes arrive and
	// keeps its place between reads, so that no byte is scanned twice: an
	// NDJSON value spread over lines, an LSP body.
	scan jsonScanner
	// NDJSON: a value spread over several lines, kept until it closes.
	acc []byte
	// probed counts the bytes looksLikeMessage decoded, for work.
	probed int64

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
	fr := &frameReader{in: newInput(r), framing: f, detected: detected}
	if f != Auto {
		detected(f)
	}
	return fr
}

// work is what framing has cost so far, in bytes: those taken from the
// input (again after being handed back), those the JSON scanner looked at
// and those looksLikeMessage decoded. It grows linearly with the input,
// whatever the input (TestFramingWorkIsLinearInTheInput).
func (r *frameReader) work() int64 {
	return r.in.taken + r.scan.scanned + r.probed
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
		b, err := r.in.peek(1)
		if err != nil {
			// Nothing but whitespace: answer in NDJSON if anything is ever sent.
			r.setFraming(NDJSON)
			return err
		}
		if !isSpace(b[0]) {
			break
		}
		r.in.discard(1)
	}
	f := LSP
	for i := 1; i <= len(contentLength); i++ {
		b, err := r.in.peek(i)
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
		line, err := r.in.readLine()
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

// readBody reads an LSP body of the given length. Its JSON is scanned as it
// arrives, so that a Content-Length too long for its body is found where
// the body ends and the next frame begins, and nothing after that point is
// read as part of it: each byte is read once, and a misframed frame costs
// only itself. Only the few bytes of a header name looked at to decide, or
// the tail of a broken body that holds the next header, are handed back.
func (r *frameReader) readBody(length int64) ([]byte, error) {
	// Grow only as data arrives, so that a lying header costs what was
	// really sent (never nil: nil would mean "no frame" to ReadObject).
	b := []byte{}
	hs := headerSearch{first: -1}
	r.scan.reset()
	for int64(len(b)) < length && !r.scan.ended() {
		w, err := r.in.window(int(min(length-int64(len(b)), readBufSize)))
		if err != nil {
			return r.bodyEnded(len(b), length, err)
		}
		n := r.scan.scan(w)
		hs.feed(w[:n])
		b = growBody(b, n, length)
		b = append(b, w[:n]...)
		r.in.discard(n)
	}
	if !r.scan.ended() {
		r.scan.eof() // the whole length was read: a top-level number ends here
	}
	if r.scan.state == scanDone {
		// A whole value: blank space may follow it, then either the body
		// ends or the next frame's header begins.
		for int64(len(b)) < length {
			w, err := r.in.window(int(min(length-int64(len(b)), readBufSize)))
			if err != nil {
				return r.bodyEnded(len(b), length, err)
			}
			k := 0
			for k < len(w) && isSpace(w[k]) {
				k++
			}
			hs.feed(w[:k])
			b = append(b, w[:k]...)
			r.in.discard(k)
			if k < len(w) {
				break
			}
		}
		if int64(len(b)) == length {
			return b, nil
		}
		// The next header's name may be cut anywhere, down to its first
		// letter ("C", "Content-Len"), so a search for the whole
		// "Content-Length:" would miss it and resynchronisation would skip
		// the next frame. Only the two headers LSP defines count, so that
		// trailing garbage is not taken for a header.
		p, err := r.in.peek(int(min(length-int64(len(b)), int64(len(contentLength)))))
		if err != nil {
			return r.bodyEnded(len(b)+len(p), length, err)
		}
		if startsHeader(p) {
			r.misframed = fmt.Sprintf("parse error: Content-Length %d is longer than the message, which ends at byte %d", length, len(b))
			return b, nil
		}
	}
	// The body is not JSON. If a Content-Length header is in it, a
	// Content-Length too long swallowed the start of the next frame: hand
	// that part back so that only this frame is lost. Past the first
	// header nothing matters, so the rest of the body is read only while
	// none is found.
	for hs.first < 0 && int64(len(b)) < length {
		w, err := r.in.window(int(min(length-int64(len(b)), readBufSize)))
		if err != nil {
			return r.bodyEnded(len(b), length, err)
		}
		n := hs.feed(w)
		b = append(b, w[:n]...)
		r.in.discard(n)
	}
	cut := int(hs.first)
	if cut < 0 {
		cut = cutHeaderAtEnd(b)
	}
	if cut >= 0 {
		r.in.unread(b[cut:])
		b = b[:cut]
	}
	return b, nil
}

// growBody makes room in b for n more bytes of a body of length bytes:
// twice the room each time, and the whole length once an eighth of it
// came, so that a lying header still costs at most sixteen times what
// was really sent. append grows a long slice by a quarter at a time, and
// each step copies it: a 50 MB body was copied some twenty times, and a
// buffer and the next one a quarter larger were alive at once when the
// last bytes arrived (docs/performance.md, "One large prompt").
func growBody(b []byte, n int, length int64) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	next := int64(max(2*cap(b), len(b)+n))
	if 8*next >= length {
		next = length
	}
	size := int(min(length, next))
	grown := make([]byte, len(b), size)
	copy(grown, b)
	return grown
}

// bodyEnded reports input that ended n bytes into a body.
func (r *frameReader) bodyEnded(n int, length int64, err error) ([]byte, error) {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	r.fail("parse error: input ended %d bytes into a %d-byte body", n, length)
	r.err = err
	return nil, err
}

// startsHeader reports whether p is the beginning of a Content-Length or
// Content-Type header (p may stop inside the name: the body ended there).
func startsHeader(p []byte) bool {
	for _, name := range []string{contentLength, contentType} {
		n := min(len(p), len(name))
		if n > 0 && strings.EqualFold(string(p[:n]), name[:n]) {
			return true
		}
	}
	return false
}

// headerSearch finds the first "Content-Length:" (in any case) in the bytes
// fed to it, in one pass: since the name's first letter occurs nowhere else
// in it, a mismatch never has to look back.
type headerSearch struct {
	matched int   // bytes of the name matched so far
	fed     int64 // bytes fed so far
	first   int64 // where the first one starts; -1 until found
}

// feed looks at b, up to the end of the first header found, and returns how
// many bytes of b it took.
func (h *headerSearch) feed(b []byte) int {
	if h.first >= 0 {
		return len(b)
	}
	for i, c := range b {
		switch c = lower(c); {
		case c == contentLength[h.matched]:
			h.matched++
		case c == contentLength[0]:
			h.matched = 1
		default:
			h.matched = 0
		}
		if h.matched == len(contentLength) {
			h.first = h.fed + int64(i) + 1 - int64(len(contentLength))
			h.fed += int64(i) + 1
			return i + 1
		}
	}
	h.fed += int64(len(b))
	return len(b)
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

// nextNDJSON returns the next JSON value. A value opening with { or [ may
// span lines: lines are added until it closes or cannot be valid any more
// (a string cannot span lines). A line that is itself a complete JSON-RPC
// message while a value is still open means the open value was truncated:
// it is reported and the line starts afresh.
func (r *frameReader) nextNDJSON() ([]byte, error) {
	for {
		line, err := r.in.readLine()
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
		r.scan.reset()
		if r.scanLine(t) {
			return t, true
		}
		r.acc = append(append(r.acc[:0], t...), '\n')
		return nil, false
	}
	if r.looksLikeMessage(t) {
		r.fail("parse error: incomplete JSON value before the next message")
		r.acc = r.acc[:0]
		return r.feedLine(line)
	}
	// The scanner goes on from where the last line left it, so that a
	// value of many lines (or garbage that opened with a bracket, which
	// must not swallow the lines after it) costs its bytes once.
	ended := r.scanLine(t)
	r.acc = append(r.acc, t...)
	if ended {
		f := r.acc
		r.acc = nil
		return f, true
	}
	r.acc = append(r.acc, '\n')
	return nil, false
}

var newline = []byte{'\n'}

// scanLine scans one more line of the open value and the line break after
// it, and reports whether the value ended: it closed, or cannot be valid.
// Bytes after the close are left for classify to reject.
func (r *frameReader) scanLine(t []byte) bool {
	r.scan.scan(t)
	if !r.scan.ended() {
		r.scan.scan(newline)
	}
	return r.scan.ended()
}

// looksLikeMessage reports whether a line is a whole JSON object with a
// top-level "jsonrpc" member, which a line inside a pretty-printed message
// practically never is.
func (r *frameReader) looksLikeMessage(t []byte) bool {
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' || !bytes.Contains(t, []byte(`"jsonrpc"`)) {
		return false
	}
	r.probed += int64(len(t))
	var m struct {
		JSONRPC *json.RawMessage `json:"jsonrpc"`
	}
	return json.Unmarshal(t, &m) == nil && m.JSONRPC != nil
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
