package provider

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r io.Reader) ([]sseEvent, error) {
	t.Helper()
	s := newSSEReader(r)
	var evs []sseEvent
	for {
		ev, err := s.next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, sseEvent{Event: ev.Event, Data: append([]byte(nil), ev.Data...)})
	}
}

func TestSSEReader(t *testing.T) {
	in := ": comment\n\n" +
		"event: message_start\ndata: {\"a\":1}\n\n" +
		"data:no-space\r\n\r\n" +
		"data: line one\ndata: line two\ndata\nid: 7\nretry: 100\n\n" +
		"event: lonely\n\n" + // no data: not dispatched, and its name does not leak
		"data: last\n" // no blank line before EOF
	// One byte at a time also exercises reads that stop mid-line.
	for name, r := range map[string]io.Reader{"whole": strings.NewReader(in), "bytewise": iotest.OneByteReader(strings.NewReader(in))} {
		evs, err := readAll(t, r)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("%s: err = %v", name, err)
		}
		want := []sseEvent{
			{"message_start", []byte(`{"a":1}`)},
			{"", []byte("no-space")},
			{"", []byte("line one\nline two\n")},
			{"", []byte("last")},
		}
		if len(evs) != len(want) {
			t.Fatalf("%s: %d events: %q", name, len(evs), evs)
		}
		for i := range want {
			if evs[i].Event != want[i].Event || string(evs[i].Data) != string(want[i].Data) {
				t.Errorf("%s: event %d = %q %q, want %q %q", name, i, evs[i].Event, evs[i].Data, want[i].Event, want[i].Data)
			}
		}
	}
}

func TestSSEReaderLongLine(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	evs, err := readAll(t, strings.NewReader("data: "+long+"\r\n\r\ndata: after\n\n"))
	if !errors.Is(err, io.EOF) || len(evs) != 2 || string(evs[0].Data) != long || string(evs[1].Data) != "after" {
		t.Fatalf("err %v, %d events", err, len(evs))
	}
}

func TestSSEReaderDropsCutLine(t *testing.T) {
	evs, err := readAll(t, strings.NewReader("data: one\n\ndata: {\"cut"))
	if !errors.Is(err, io.EOF) || len(evs) != 1 || string(evs[0].Data) != "one" {
		t.Fatalf("err %v events %q", err, evs)
	}
	// A read error other than EOF comes through.
	boom := errors.New("connection reset")
	_, err = readAll(t, io.MultiReader(strings.NewReader("data: one\n\n"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}
