package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/loopdev/loop/convo"
)

// Opt is an optional value held by value: the zero Opt is "none". Structs
// that hold Opts instead of pointers copy with a plain assignment and
// compare with ==.
type Opt[T any] struct {
	Value T
	Set   bool
}

// Some returns an Opt holding v.
func Some[T any](v T) Opt[T] { return Opt[T]{Value: v, Set: true} }

// OptOf returns an Opt holding *p, or none when p is nil.
func OptOf[T any](p *T) Opt[T] {
	if p == nil {
		return Opt[T]{}
	}
	return Some(*p)
}

// Ptr returns a new pointer to the value, or nil for none: the form of
// JSON members that are left out when absent.
func (o Opt[T]) Ptr() *T {
	if !o.Set {
		return nil
	}
	v := o.Value
	return &v
}

// PromptTiming is the wall time of one accepted prompt (docs/protocol.md
// 4.7, docs/storage.md). Indexes are into the message history. It holds
// no pointers: copying a slice of timings copies them.
type PromptTiming struct {
	ID                string
	UserMessageIndex  int
	MessageStartIndex Opt[int] // inclusive
	MessageEndIndex   Opt[int] // exclusive
	StartedAt         int64
	FinishedAt        Opt[int64]
	Stopped           bool
	// Usage totals the model calls the prompt's run made (docs/protocol.md,
	// "Usage").
	Usage convo.UsageSum
	// Interrupted: the run was cut short by a crash and its journal
	// recovered on open (docs/storage.md); FinishedAt is then its last
	// journaled record.
	Interrupted bool
}

// TimingAt is a prompt timing to record at its position in the session's
// list of timings: Index below the number of timings replaces the one
// there, Index equal to it appends (docs/storage.md, timings.jsonl).
type TimingAt struct {
	Index  int
	Timing PromptTiming
}

func (t *PromptTiming) validate() error {
	if t.UserMessageIndex < 0 || (t.MessageStartIndex.Set && t.MessageStartIndex.Value < 0) ||
		(t.MessageEndIndex.Set && t.MessageEndIndex.Value < 0) {
		return fmt.Errorf("negative index")
	}
	return t.Usage.Validate()
}

func timingOfRecord(r *timingRecord) PromptTiming {
	return PromptTiming{
		ID: r.ID, UserMessageIndex: r.UserMessageIndex, MessageStartIndex: OptOf(r.MessageStartIndex),
		MessageEndIndex: OptOf(r.MessageEndIndex), StartedAt: r.StartedAt, FinishedAt: OptOf(r.FinishedAt), Stopped: r.Stopped,
		Usage: r.Usage.sum(), Interrupted: r.Interrupted,
	}
}

func recordOfTiming(t *PromptTiming) timingRecord {
	return timingRecord{
		ID: t.ID, UserMessageIndex: t.UserMessageIndex, MessageStartIndex: t.MessageStartIndex.Ptr(),
		MessageEndIndex: t.MessageEndIndex.Ptr(), StartedAt: t.StartedAt, FinishedAt: t.FinishedAt.Ptr(), Stopped: t.Stopped,
		Usage: usageSumRecordOf(&t.Usage), Interrupted: t.Interrupted,
	}
}

func timingsOfRecords(recs []timingRecord) []PromptTiming {
	if recs == nil {
		return nil
	}
	out := make([]PromptTiming, len(recs))
	for i := range recs {
		out[i] = timingOfRecord(&recs[i])
	}
	return out
}

func recordsOfTimings(ts []PromptTiming) []timingRecord {
	if ts == nil {
		return nil
	}
	out := make([]timingRecord, len(ts))
	for i := range ts {
		out[i] = recordOfTiming(&ts[i])
	}
	return out
}

// applyTimings returns committed with the writes applied in order, and
// whether any of them replaced a timing. committed is not modified: a
// replacement copies the slice first (readers share it, see
// Session.Timings), an append only writes past its length.
func applyTimings(committed []PromptTiming, writes []TimingAt) ([]PromptTiming, error) {
	out := committed
	copied := false
	for i, w := range writes {
		if err := w.Timing.validate(); err != nil {
			return nil, fmt.Errorf("%w: timing %d (index %d): %v", ErrInvalid, i, w.Index, err)
		}
		switch {
		case w.Index == len(out):
			out = append(out, w.Timing)
		case w.Index >= 0 && w.Index < len(out):
			if !copied {
				out = append(make([]PromptTiming, 0, len(out)+len(writes)-i), out...)
				copied = true
			}
			out[w.Index] = w.Timing
		default:
			return nil, fmt.Errorf("%w: timing %d has index %d, the session has %d timings", ErrInvalid, i, w.Index, len(out))
		}
	}
	return out, nil
}

// encodeTimings encodes writes as timings.jsonl lines.
func encodeTimings(writes []TimingAt) ([]byte, error) {
	if len(writes) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range writes {
		line := timingLine{Index: writes[i].Index, timingRecord: recordOfTiming(&writes[i].Timing)}
		if err := enc.Encode(&line); err != nil { // Encode ends the line with '\n'
			return nil, fmt.Errorf("%w: encode prompt timing %d: %v", ErrInvalid, i, err)
		}
	}
	return buf.Bytes(), nil
}

// parseTimings folds the committed bytes of timings.jsonl (exactly count
// lines) over the timings the header holds (an old header's
// promptTimings; none for a current one): each line's timing replaces the
// one at its index, or appends when the index is the number of timings so
// far. An index past that is malformed.
func parseTimings(base []PromptTiming, data []byte, count int, file string) ([]PromptTiming, error) {
	lines, err := splitLines(data, count, file)
	if err != nil {
		return nil, err
	}
	out := base
	for i, l := range lines {
		w, cut, err := parseTimingLine(l, i+1, file)
		if err != nil {
			return nil, err
		}
		if cut {
			// A rewind's cut (version 2): the timings from index on are
			// dropped (docs/storage.md, "Forks and rewinds").
			if w.Index < 0 || w.Index > len(out) {
				return nil, malformed(file, "line %d: cut at %d of %d timings", i+1, w.Index, len(out))
			}
			out = out[:w.Index:w.Index]
			continue
		}
		switch {
		case w.Index == len(out):
			out = append(out, w.Timing)
		case w.Index >= 0 && w.Index < len(out):
			out[w.Index] = w.Timing
		default:
			return nil, malformed(file, "line %d: index %d with %d timings before it", i+1, w.Index, len(out))
		}
	}
	return out, nil
}

// parseTimingLine decodes line n of timings.jsonl: a timing and the index
// it is written at, or a rewind's cut (cut) and the index it keeps the
// timings up to.
func parseTimingLine(l []byte, n int, file string) (_ TimingAt, cut bool, _ error) {
	// index is required: a line without it must not read as index 0
	// and silently replace the first timing.
	var probe struct {
		Index *int `json:"index"`
		Cut   bool `json:"cut"`
	}
	if err := json.Unmarshal(l, &probe); err != nil {
		return TimingAt{}, false, malformed(file, "line %d: %v", n, err)
	}
	if probe.Index == nil {
		return TimingAt{}, false, malformed(file, "line %d: no index", n)
	}
	if probe.Cut {
		return TimingAt{Index: *probe.Index}, true, nil
	}
	var rec timingLine
	if err := json.Unmarshal(l, &rec); err != nil {
		return TimingAt{}, false, malformed(file, "line %d: %v", n, err)
	}
	t := timingOfRecord(&rec.timingRecord)
	if err := t.validate(); err != nil {
		return TimingAt{}, false, malformed(file, "line %d: %v", n, err)
	}
	return TimingAt{Index: rec.Index, Timing: t}, false, nil
}

// cutLine is the timings.jsonl line of a rewind that keeps the first n
// timings.
func cutLine(n int) []byte {
	return fmt.Appendf(nil, "{\"index\":%d,\"cut\":true}\n", n)
}
