package store

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store/internal/fsys"
)

// journalRun is what a journal holds: its begin record and the messages,
// tool starts and times of its complete records.
type journalRun struct {
	begin journalRecord
	msgs  []convo.Message
	// usage is the run's usage as of each message (the latest assistant
	// record's runUsage at or before it).
	usage []convo.UsageSum
	// started holds the tool calls whose start was journaled, by the
	// history index of their assistant message and their number in it.
	started map[[2]int]bool
	last    int64 // Unix ms of the last complete record
	torn    bool  // a last record was cut (or damaged) and left out
}

// base is the history index of the run's first message.
func (r *journalRun) base() int { return *r.begin.MessageCount }

// parseJournal reads a journal's bytes (docs/storage.md, "The journal of
// the run in progress"). A last line that is cut or fails its check is a
// write a crash interrupted: it is left out (torn). Any other line that
// fails, a first record that is not a begin record, a begin record of
// another version or another session, or records out of order, make the
// journal malformed: an error naming path and the line. nil, nil: the
// journal holds no complete begin record (empty, or only a torn one).
func parseJournal(data []byte, path, sessionID string) (*journalRun, error) {
	var run *journalRun
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			// A line without its newline: the write a crash cut.
			if run != nil {
				run.torn = true
			}
			return run, nil
		}
		line := data[:i]
		data = data[i+1:]
		var rec journalLine
		err := decodeJournalLine(line, &rec)
		if err != nil {
			if len(data) == 0 {
				// The last line: a write cut by a crash (a power loss
				// can leave a line's length before its bytes).
				if run != nil {
					run.torn = true
				}
				return run, nil
			}
			return nil, malformed(path, "line %d: %v", n, err)
		}
		if run == nil {
			if run, err = beginJournal(&rec, sessionID); err != nil {
				return nil, malformed(path, "line %d: %v", n, err)
			}
			continue
		}
		if err := run.add(&rec); err != nil {
			return nil, malformed(path, "line %d: %v", n, err)
		}
	}
	return run, nil
}

// decodeJournalLine checks a line's CRC-32C (a tab and 8 hex digits
// after the JSON object) and decodes it.
func decodeJournalLine(line []byte, rec *journalLine) error {
	n := len(line) - journalCRCSize
	if n < 2 || line[n] != '\t' {
		return fmt.Errorf("not a journal record")
	}
	var sum [4]byte
	if _, err := hex.Decode(sum[:], line[n+1:]); err != nil {
		return fmt.Errorf("checksum %q is not hexadecimal", line[n+1:])
	}
	want := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
	obj := line[:n]
	if got := fsys.CRC32C(0, obj); got != want {
		return fmt.Errorf("checksum %08x, the record says %08x", got, want)
	}
	return json.Unmarshal(obj, rec)
}

// beginJournal checks a journal's first record.
func beginJournal(rec *journalLine, sessionID string) (*journalRun, error) {
	b := &rec.journalRecord
	switch {
	case b.Type != journalBegin:
		return nil, fmt.Errorf("the first record is %q, not %q", b.Type, journalBegin)
	case b.Version != JournalVersion:
		return nil, fmt.Errorf("journal version %d; this Loop reads version %d", b.Version, JournalVersion)
	case b.SessionID != sessionID:
		return nil, fmt.Errorf("the journal of session %q, not of this session %s", b.SessionID, sessionID)
	case b.RunID == "":
		return nil, fmt.Errorf("begin record without runId")
	case b.MessageCount == nil || *b.MessageCount < 0 || b.UserMessageIndex == nil || *b.UserMessageIndex < 0:
		return nil, fmt.Errorf("begin record without a valid messageCount and userMessageIndex")
	case b.Time < 0 || b.StartedAt < 0:
		return nil, fmt.Errorf("negative time")
	}
	run := &journalRun{begin: *b, started: map[[2]int]bool{}, last: b.Time}
	if rec.Message != nil {
		if b.Index == nil || *b.Index != *b.MessageCount || rec.Message.Role != convo.RoleUser {
			return nil, fmt.Errorf("the begin record's prompt is not a user message at index messageCount")
		}
		run.push(rec.Message.message(), nil)
	}
	return run, nil
}

// push appends a message of the run.
func (r *journalRun) push(m convo.Message, u *usageSumRecord) {
	var prev convo.UsageSum
	if n := len(r.usage); n > 0 {
		prev = r.usage[n-1]
	}
	if u != nil {
		prev = u.sum()
	}
	r.msgs = append(r.msgs, m)
	r.usage = append(r.usage, prev)
}

// add checks and takes one record after the begin record.
func (r *journalRun) add(rec *journalLine) error {
	b := &rec.journalRecord
	if b.Time < 0 {
		return fmt.Errorf("negative time")
	}
	next := r.base() + len(r.msgs)
	switch b.Type {
	case journalMessage:
		if b.Index == nil || *b.Index != next {
			return fmt.Errorf("message record out of order (index %v, want %d)", ptrValue(b.Index), next)
		}
		if rec.Message == nil {
			return fmt.Errorf("message record without its message")
		}
		if _, ok := roleKind(rec.Message.Role); !ok {
			return fmt.Errorf("message has role %q", rec.Message.Role)
		}
		if u := b.RunUsage.sum(); u.Validate() != nil {
			return fmt.Errorf("runUsage: %v", u.Validate())
		}
		r.push(rec.Message.message(), b.RunUsage)
	case journalToolStart:
		if b.Index == nil || b.Call == nil || *b.Index < r.base() || *b.Index >= next {
			return fmt.Errorf("toolStart record for message %v, which the journal does not hold", ptrValue(b.Index))
		}
		m := &r.msgs[*b.Index-r.base()]
		if m.Role != convo.RoleAssistant || *b.Call < 0 || *b.Call >= len(toolCallsOf(m)) {
			return fmt.Errorf("toolStart record for call %d of message %d, which has no such call", *b.Call, *b.Index)
		}
		r.started[[2]int{*b.Index, *b.Call}] = true
	default:
		return fmt.Errorf("record type %q", b.Type)
	}
	r.last = max(r.last, b.Time)
	return nil
}

func ptrValue(p *int) any {
	if p == nil {
		return "none"
	}
	return *p
}

// toolCallsOf returns the tool call blocks of m, in order.
func toolCallsOf(m *convo.Message) []convo.Block {
	var calls []convo.Block
	for _, b := range m.Content {
		if b.Type == convo.BlockToolCall {
			calls = append(calls, b)
		}
	}
	return calls
}
