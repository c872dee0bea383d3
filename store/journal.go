package store

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store/internal/fsys"
)

// The journal of the run in progress (docs/storage.md, "The journal of the
// run in progress"). A run is committed once, when it ends (commit.go); a
// process killed before that would lose everything the run did, though
// its tools' effects on the workspace stay. So while a run is under way
// the engine appends what completes to journal.jsonl beside the logs: the
// accepted prompt, each finished message, and, before each tool starts, a
// record that it starts. The next open of the session by a process that
// takes its lock commits what the journal holds as one interrupted run
// (recover.go), and the end-of-run commit retires it.
//
// Durability: a tool's start record and a completed assistant message are
// fsynced before the run goes on (a tool must not run unless its start is
// on disk); the begin record, tool results and steering messages are
// written and made durable by the next fsync (the next start record, the
// next assistant message, or the commit). kill -9 loses nothing written:
// the bytes are in the page cache. A power loss can lose what was written
// after the last fsync: the tool results and steering messages since, and
// the begin record of a run that has not fsynced yet.

// JournalVersion is the version of the journal's format, in its begin
// record. A journal of another version is never applied.
const JournalVersion = 1

// The journal's record types.
const (
	journalBegin     = "begin"
	journalMessage   = "message"
	journalToolStart = "toolStart"
)

// JournalBegin is what a run's journal starts with.
type JournalBegin struct {
	RunID     string
	RequestID string // "" for a resume
	StartedAt int64  // Unix ms: the prompt's acceptance, or the resume's
	// MessageCount is the history's length when the run began: the
	// journal's messages are the history from there on.
	MessageCount int
	// UserMessageIndex is the run's prompt timing's (docs/storage.md,
	// timings.jsonl).
	UserMessageIndex int
	// User is the accepted prompt, nil for a resume (it adds no message).
	User *convo.Message
	At   int64 // Unix ms of the record
}

// Journal appends the records of one run to the session's journal. It is
// safe for concurrent use (its mutex orders the file's writes and is held
// across them; it is a leaf: docs/lock-order.md). A failed write fails
// every later one: the journal no longer says what the run did.
type Journal struct {
	mu   sync.Mutex
	s    *Session
	f    fsys.File
	path string
	off  int64 // where the next record goes
	// next is the history index of the next message record.
	next int
	err  error
	buf  []byte
}

// BeginJournal starts the journal of a run: it truncates what an earlier
// run left (retired, or already committed: recover.go tells the two
// apart) and writes the begin record, without fsyncing it (the run's
// first fsync covers it). A draft is written to disk first (Persist), so
// that the session exists for the next process to recover; an in-memory
// session has no journal (nil, nil).
func (s *Session) BeginJournal(b JournalBegin) (*Journal, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writable(); err != nil {
		return nil, err
	}
	switch s.kind {
	case inMemory:
		return nil, nil
	case draft:
		if err := s.persistLocked(b.RunID); err != nil {
			return nil, err
		}
	}
	j := s.journal
	if j == nil {
		path := filepath.Join(s.dir, journalFile)
		f, err := s.fs.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fsys.PathError("open", path, err)
		}
		// The file's entry must outlive a power loss before any record
		// in it counts on it; later runs of this handle reuse the file.
		// Once per handle, whether or not the file was there: a process
		// that died between the create and this fsync, or whose fsync
		// failed, left a file whose entry may not be durable.
		if err := s.fs.SyncDir(s.dir); err != nil {
			f.Close()
			return nil, fsys.PathError("fsync", s.dir, err)
		}
		j = &Journal{s: s, f: f, path: path}
		s.journal = j
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.err = nil
	if err := j.f.Truncate(0); err != nil {
		j.err = fsys.PathError("truncate", j.path, err)
		return nil, j.err
	}
	j.off = 0
	j.next = b.MessageCount
	rec := journalRecord{
		Type: journalBegin, Time: b.At, Version: JournalVersion, SessionID: s.id, RunID: b.RunID,
		RequestID: b.RequestID, StartedAt: b.StartedAt, MessageCount: intPtr(b.MessageCount),
		UserMessageIndex: intPtr(b.UserMessageIndex),
	}
	if b.User != nil {
		rec.Index = intPtr(b.MessageCount)
		j.next++
	}
	if err := j.appendLocked(&rec, b.User, false); err != nil {
		return nil, err
	}
	return j, nil
}

// Message appends a finished message of the run: index is its place in
// the history (the run's messages are contiguous from the begin record's
// MessageCount), runUsage the run's model calls so far (what the
// recovered timing and the usage ledger take). durable fsyncs it before
// returning (a completed assistant message); otherwise the next fsync
// makes it durable.
func (j *Journal) Message(index int, m *convo.Message, runUsage convo.UsageSum, at int64, durable bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil && index != j.next {
		j.err = fmt.Errorf("%w: journal %s: message at history index %d, want %d", ErrInvalid, j.path, index, j.next)
	}
	if j.err != nil {
		return j.err
	}
	rec := journalRecord{Type: journalMessage, Time: at, Index: intPtr(index)}
	if m.Role == convo.RoleAssistant {
		rec.RunUsage = usageSumRecordOf(&runUsage)
	}
	if err := j.appendLocked(&rec, m, durable); err != nil {
		return err
	}
	j.next++
	return nil
}

// ToolStart appends and fsyncs the record that tool call number call
// (counting the tool calls of the assistant message at history index
// index from 0) starts; id is its provider id. The tool must not start
// unless this returns nil: after a crash, a call with this record and no
// result may have had its effect (recover.go says so in its result).
func (j *Journal) ToolStart(index, call int, id string, at int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	rec := journalRecord{Type: journalToolStart, Time: at, Index: intPtr(index), Call: intPtr(call), CallID: id}
	return j.appendLocked(&rec, nil, true)
}

// Retire empties the journal once its run is committed, so that the next
// open finds nothing to recover. It does not fsync: a retire lost to a
// power loss leaves a journal whose run id the committed timings hold,
// which the next open recognizes as committed and retires again.
func (j *Journal) Retire() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.f.Truncate(0); err != nil {
		j.err = fsys.PathError("truncate", j.path, err)
		return j.err
	}
	// A retired journal takes no more records until the next run's
	// BeginJournal: a record after the retire would have no begin record
	// before it, and the next open would refuse the journal.
	j.off, j.err = 0, errRetired
	return nil
}

// errRetired is what a retired journal answers a record with.
var errRetired = errors.New("the run's journal is retired: its run is committed")

// Err is the failure that stopped the journal, or nil.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}

// appendLocked writes rec (with m as its message member, when not nil)
// as one line at the journal's end and, when durable, fsyncs. The line is
// encoded as messages.jsonl's lines are (recordjson.go): a long message
// (a 50 MB prompt) goes to the file a piece at a time as it is encoded,
// summed as it goes, and is never whole in memory; a short record is one
// write. The checksum ends the line, so it can follow the pieces.
func (j *Journal) appendLocked(rec *journalRecord, m *convo.Message, durable bool) error {
	off := j.off
	var crc uint32
	e := lineEnc{buf: j.buf[:0], sink: func(p []byte) error {
		crc = fsys.CRC32C(crc, p)
		if _, err := j.f.WriteAt(p, off); err != nil {
			return fsys.PathError("write", j.path, err)
		}
		off += int64(len(p))
		return nil
	}}
	rec.encode(&e)
	if m != nil {
		e.raw(`,"message":`)
		r := messageRecordOf(m)
		r.encode(&e)
	}
	e.raw("}")
	if e.err == nil {
		crc = fsys.CRC32C(crc, e.buf)
		e.buf = appendJournalCRC(e.buf, crc)
		if _, err := j.f.WriteAt(e.buf, off); err != nil {
			e.fail(fsys.PathError("write", j.path, err))
		}
		off += int64(len(e.buf))
	}
	if cap(e.buf) <= 2*linePiece {
		j.buf = e.buf[:0] // reused
	}
	if e.err != nil {
		if !errors.Is(e.err, os.ErrClosed) && !isPathError(e.err) {
			e.err = fmt.Errorf("journal %s: %w", j.path, e.err)
		}
		j.err = e.err
		return j.err
	}
	j.off = off
	if durable {
		if err := j.f.Sync(); err != nil {
			j.err = fsys.PathError("fsync", j.path, err)
			return j.err
		}
	}
	return nil
}

// isPathError reports whether err already names the file.
func isPathError(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) || strings.Contains(err.Error(), journalFile)
}

// appendJournalCRC ends a journal line: a tab, the lower-case hex
// CRC-32C of the JSON object before it, "\n".
func appendJournalCRC(dst []byte, crc uint32) []byte {
	var sum [4]byte
	sum[0], sum[1], sum[2], sum[3] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	dst = append(dst, '\t')
	dst = hex.AppendEncode(dst, sum[:])
	return append(dst, '\n')
}

// journalRecord is one line of journal.jsonl, without its message (which
// encodeJournalLine writes as the last member, in messages.jsonl's form).
type journalRecord struct {
	Type string `json:"type"`
	Time int64  `json:"time"`
	// begin
	Version          int    `json:"version,omitempty"`
	SessionID        string `json:"sessionId,omitempty"`
	RunID            string `json:"runId,omitempty"`
	RequestID        string `json:"requestId,omitempty"`
	StartedAt        int64  `json:"startedAt,omitempty"`
	MessageCount     *int   `json:"messageCount,omitempty"`
	UserMessageIndex *int   `json:"userMessageIndex,omitempty"`
	// message (and a begin with the prompt), toolStart
	Index *int `json:"index,omitempty"`
	// toolStart
	Call   *int   `json:"call,omitempty"`
	CallID string `json:"callId,omitempty"`
	// message of the assistant
	RunUsage *usageSumRecord `json:"runUsage,omitempty"`
}

// encode writes rec's members into e, byte for byte as encoding/json
// writes them (TestJournalRecordsEncodeAsEncodingJSON), without the
// closing brace: a record is written for every step of a run, and
// reflection would be most of its CPU.
func (r *journalRecord) encode(e *lineEnc) {
	e.raw(`{"type":`)
	e.str(r.Type)
	e.raw(`,"time":`)
	e.buf = strconv.AppendInt(e.buf, r.Time, 10)
	if r.Version != 0 {
		e.raw(`,"version":`)
		e.buf = strconv.AppendInt(e.buf, int64(r.Version), 10)
	}
	e.member(`,"sessionId":`, r.SessionID)
	e.member(`,"runId":`, r.RunID)
	e.member(`,"requestId":`, r.RequestID)
	if r.StartedAt != 0 {
		e.raw(`,"startedAt":`)
		e.buf = strconv.AppendInt(e.buf, r.StartedAt, 10)
	}
	for _, m := range []struct {
		key string
		v   *int
	}{{`,"messageCount":`, r.MessageCount}, {`,"userMessageIndex":`, r.UserMessageIndex}, {`,"index":`, r.Index}, {`,"call":`, r.Call}} {
		if m.v != nil {
			e.raw(m.key)
			e.buf = strconv.AppendInt(e.buf, int64(*m.v), 10)
		}
	}
	e.member(`,"callId":`, r.CallID)
	if r.RunUsage != nil {
		u, err := jsonenc.Marshal(r.RunUsage) // numbers; a float's form is encoding/json's
		if err != nil {
			e.fail(err)
			return
		}
		e.raw(`,"runUsage":`)
		e.raw(string(u))
	}
}

// journalLine is a line as read: the record and its message.
type journalLine struct {
	journalRecord
	Message *messageRecord `json:"message,omitempty"`
}

func intPtr(i int) *int { return &i }

// journalCRCSize is the line's end before its newline: a tab and 8 hex
// digits.
const journalCRCSize = 9

// closeJournal closes the journal's file; call it holding wmu.
func (s *Session) closeJournal() error {
	j := s.journal
	if j == nil {
		return nil
	}
	s.journal = nil
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = fmt.Errorf("%w: %s", ErrClosed, s.id)
	}
	return j.f.Close()
}
