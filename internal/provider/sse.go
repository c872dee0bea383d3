package provider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// sseEvent is one server-sent event. Data is valid until the next call to
// sseReader.next.
type sseEvent struct {
	Event string
	Data  []byte
}

// sseReader reads server-sent events (the subset model APIs use): "event"
// and "data" fields, ":" comments, LF or CRLF line ends, several data lines
// joined with "\n", and no limit on line length.
type sseReader struct {
	r     *bufio.Reader
	line  []byte // the current line when it outgrew the bufio buffer
	data  bytes.Buffer
	event string
	has   bool // a data field was seen since the last dispatch
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next event. At the end of the input it returns io.EOF;
// a last event that was not followed by a blank line is still returned when
// its final line was complete, because some servers close right after
// "data: [DONE]\n". A cut-off final line is dropped: the caller then sees
// no end marker and reports truncation.
func (s *sseReader) next() (sseEvent, error) {
	for {
		line, complete, err := s.readLine()
		if !complete {
			if errors.Is(err, io.EOF) && s.has {
				return s.dispatch(), nil
			}
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if s.has {
				return s.dispatch(), nil
			}
			s.event = ""
			continue
		}
		s.field(line)
	}
}

func (s *sseReader) dispatch() sseEvent {
	ev := sseEvent{Event: s.event, Data: s.data.Bytes()}
	s.event = ""
	s.has = false
	s.data.Reset() // keeps the bytes ev.Data points to until the next write
	return ev
}

func (s *sseReader) field(line []byte) {
	if line[0] == ':' {
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if s.has {
			s.data.WriteByte('\n')
		}
		s.data.Write(value)
		s.has = true
	case "event":
		s.event = string(value)
	}
}

// readLine returns one line without its line end. complete reports whether
// the line ended with "\n"; err is the read error that ended the line, if
// any.
func (s *sseReader) readLine() (line []byte, complete bool, err error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.line = append(s.line, chunk...)
			continue
		}
		if len(s.line) > 0 {
			s.line = append(s.line, chunk...)
			chunk = s.line
		}
		if err != nil {
			return chunk, false, err
		}
		chunk = chunk[:len(chunk)-1]
		if n := len(chunk); n > 0 && chunk[n-1] == '\r' {
			chunk = chunk[:n-1]
		}
		return chunk, true, nil
	}
}

// readTypedEvents reads a stream whose events each carry one JSON object
// named by a type member (Anthropic messages, OpenAI responses): each is
// decoded into an E and handed to apply, with the SSE event name for an
// object without a type, until apply says the stream is done. A stream
// that ends first was cut (truncatedError); "[DONE]" and empty data are
// skipped.
func readTypedEvents[E any](r io.Reader, apply func(e *E, name string) (done bool, err error)) error {
	sse := newSSEReader(r)
	for {
		ev, err := sse.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return truncatedError(err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 || string(data) == "[DONE]" {
			continue
		}
		var e E
		if err := json.Unmarshal(data, &e); err != nil {
			return &Error{Kind: KindProvider, Message: "unreadable stream event: " + err.Error(), Err: err}
		}
		done, err := apply(&e, ev.Event)
		if err != nil || done {
			return err
		}
	}
}
