package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store/internal/fsys"
)

// indexRecordSize is the size of one index.bin record: offset (uint64 LE)
// and length (uint32 LE, newline included) of the message's line in
// messages.jsonl, its kind (one byte), three zero bytes.
const indexRecordSize = 16

// Index record kinds. A round (one prompt and its output) starts at each
// user record.
const (
	kindOther      = 0
	kindUser       = 1
	kindAssistant  = 2
	kindToolResult = 3
)

func roleKind(role string) (byte, bool) {
	switch role {
	case convo.RoleUser:
		return kindUser, true
	case convo.RoleAssistant:
		return kindAssistant, true
	case convo.RoleToolResult:
		return kindToolResult, true
	}
	return kindOther, false
}

// encodedBatch is the bytes one commit appends to the logs.
type encodedBatch struct {
	lines []byte // messages.jsonl bytes, but for the long lines
	// long are the lines of long messages (a pasted file, a prompt of
	// 50 MB): counted and summed here, and written a piece at a time
	// (writeLines) where lines would hold them, so that no copy of their
	// text is made in memory.
	long []longLine
	// size and crc are those of all the messages.jsonl bytes, long lines
	// included: crc continues the one encodeBatch was given.
	size  int64
	crc   uint32
	index []byte // index.bin records
	users int    // user messages among them
	rt    []byte // runtime.jsonl bytes
	// timings.jsonl bytes, set by the caller (encodeTimings): what a
	// commit writes there depends on the committed timings, not on the
	// messages.
	timings []byte
}

// longLine is a message line left out of encodedBatch.lines: it goes
// after the first at bytes of lines, and is n bytes long, its newline
// included.
type longLine struct {
	at  int
	rec messageRecord
	n   int64
}

// longLineSize is the estimated size (messagesSize) from which a message's
// line is written in pieces rather than from the batch's buffer.
const longLineSize = 1 << 20

// encodeBatch encodes msgs as message lines starting at byte offset off of
// messages.jsonl, whose bytes before off have the checksum crc, with their
// index records, and runtime records as lines. It rejects messages of
// unknown roles, and arguments that are not JSON: Open would refuse them
// later. A long message is only counted and summed here, a piece at a
// time; writeLines writes it.
func encodeBatch(msgs []convo.Message, off int64, crc uint32, rt []RuntimeRecord) (encodedBatch, error) {
	b := encodedBatch{crc: crc}
	summed := 0 // the bytes of lines already in b.crc
	// One buffer, sized for the batch up front (long lines apart).
	size := 0
	long := make([]bool, len(msgs))
	for i := range msgs {
		if n := messagesSize(msgs[i : i+1]); n <= longLineSize {
			size += n
		} else {
			long[i] = true
		}
	}
	b.lines = make([]byte, 0, size)
	b.index = make([]byte, 0, len(msgs)*indexRecordSize)
	var longBytes int64 // bytes of b.long
	for i := range msgs {
		kind, ok := roleKind(msgs[i].Role)
		if !ok {
			return b, fmt.Errorf("%w: message %d has role %q", ErrInvalid, i, msgs[i].Role)
		}
		start := int64(len(b.lines)) + longBytes
		rec := messageRecordOf(&msgs[i])
		var n int64
		if long[i] {
			b.crc = fsys.CRC32C(b.crc, b.lines[summed:])
			summed = len(b.lines)
			var err error
			if n, err = writeLine(&rec, func(p []byte) error {
				b.crc = fsys.CRC32C(b.crc, p)
				return nil
			}); err != nil {
				return b, fmt.Errorf("%w: encode message %d: %v", ErrInvalid, i, err)
			}
			b.long = append(b.long, longLine{at: len(b.lines), rec: rec, n: n})
			longBytes += n
		} else {
			var err error
			if b.lines, err = rec.appendJSON(b.lines); err != nil {
				return b, fmt.Errorf("%w: encode message %d: %v", ErrInvalid, i, err)
			}
			b.lines = append(b.lines, '\n')
			n = int64(len(b.lines)) + longBytes - start
		}
		if n > math.MaxUint32 {
			return b, fmt.Errorf("%w: message %d encodes to %d bytes", ErrInvalid, i, n)
		}
		b.index = appendIndexRecord(b.index, off+start, uint32(n), kind)
		if kind == kindUser {
			b.users++
		}
	}
	b.crc = fsys.CRC32C(b.crc, b.lines[summed:])
	b.size = int64(len(b.lines)) + longBytes
	if len(rt) > 0 {
		size := 0
		for i := range rt {
			size += len(rt[i].Type) + len(rt[i].Data) + 48
		}
		b.rt = make([]byte, 0, size)
		for i := range rt {
			if rt[i].Type == "" {
				return b, fmt.Errorf("%w: runtime record %d has no type", ErrInvalid, i)
			}
			var err error
			if b.rt, err = (*runtimeRecord)(&rt[i]).appendJSON(b.rt); err != nil {
				return b, fmt.Errorf("%w: encode runtime record %d: %v", ErrInvalid, i, err)
			}
			b.rt = append(b.rt, '\n')
		}
	}
	return b, nil
}

// writeLine writes rec's line, its newline included, a piece at a time
// to sink and returns its length.
func writeLine(rec *messageRecord, sink func([]byte) error) (int64, error) {
	var n int64
	e := lineEnc{buf: make([]byte, 0, linePiece+linePiece/4), sink: func(p []byte) error {
		n += int64(len(p))
		return sink(p)
	}}
	rec.encode(&e)
	e.raw("\n")
	e.flush()
	return n, e.err
}

// writeLines writes b's message lines to f from offset off: the buffer's
// bytes as they are and the long lines a piece at a time. The pieces are
// summed again as they go, so that bytes that differ from those the
// header will name are an error, not a log that fails its checksum.
func (b *encodedBatch) writeLines(f io.WriterAt, off int64, crc uint32) error {
	at := 0
	put := func(p []byte) error {
		if len(p) == 0 {
			return nil
		}
		if _, err := f.WriteAt(p, off); err != nil {
			return err
		}
		off += int64(len(p))
		crc = fsys.CRC32C(crc, p)
		return nil
	}
	for i := range b.long {
		l := &b.long[i]
		if err := put(b.lines[at:l.at]); err != nil {
			return err
		}
		at = l.at
		n, err := writeLine(&l.rec, put)
		if err != nil {
			return err
		}
		if n != l.n {
			return fmt.Errorf("message line of %d bytes was counted as %d", n, l.n)
		}
	}
	if err := put(b.lines[at:]); err != nil {
		return err
	}
	if crc != b.crc {
		return errors.New("message lines written differ from those counted")
	}
	return nil
}

// messagesSize is at least the bytes msgs encode to: their strings as
// JSON, arguments (compacting only shortens them), and room for the
// member names and numbers.
func messagesSize(msgs []convo.Message) int {
	q := jsonenc.QuotedLen[string]
	n := 0
	for i := range msgs {
		m := &msgs[i]
		n += 256 + q(m.Role) + q(m.RequestID) + q(m.Provider) + q(m.Model) + q(m.StopReason) + q(m.ErrorMessage) + q(m.ToolCallID) + q(m.ToolName)
		for _, s := range m.Skills {
			n += q(s) + 1
		}
		for j := range m.Content {
			b := &m.Content[j]
			n += 96 + q(b.Type) + q(b.Text) + q(b.Signature) + q(b.Attachment) + q(b.Data) + q(b.MimeType) + q(b.ID) + q(b.Name) + len(b.Arguments)
		}
	}
	return n
}

func appendIndexRecord(dst []byte, off int64, n uint32, kind byte) []byte {
	var r [indexRecordSize]byte
	binary.LittleEndian.PutUint64(r[0:8], uint64(off))
	binary.LittleEndian.PutUint32(r[8:12], n)
	r[12] = kind
	return append(dst, r[:]...)
}

type indexRecord struct {
	off  int64
	n    uint32
	kind byte
}

func readIndexRecord(idx []byte, i int) indexRecord {
	r := idx[i*indexRecordSize : (i+1)*indexRecordSize]
	return indexRecord{
		off:  int64(binary.LittleEndian.Uint64(r[0:8])),
		n:    binary.LittleEndian.Uint32(r[8:12]),
		kind: r[12],
	}
}

// splitLines cuts data into exactly count newline-terminated lines.
func splitLines(data []byte, count int, file string) ([][]byte, error) {
	lines := make([][]byte, 0, count)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil, malformed(file, "line %d of the committed range has no newline", len(lines)+1)
		}
		if len(lines) == count {
			return nil, malformed(file, "committed range holds more than %d lines", count)
		}
		lines = append(lines, data[:i+1])
		data = data[i+1:]
	}
	if len(lines) != count {
		return nil, malformed(file, "committed range holds %d lines, header says %d", len(lines), count)
	}
	return lines, nil
}

// parseMessages decodes the committed bytes of messages.jsonl (mpath,
// exactly count lines, the first of them message base) and checks them against index.bin's records (ipath)
// when idx is not nil. A disagreement is index.bin's fault: the log's range
// is covered by the header's checksum, the index by nothing. Large logs
// decode in parallel: Open of a long session is CPU bound.
func parseMessages(data []byte, base, count int, idx []byte, mpath, ipath string) ([]convo.Message, error) {
	lines, err := splitLines(data, count, mpath)
	if err != nil {
		return nil, err
	}
	if idx != nil {
		if len(idx) != count*indexRecordSize {
			return nil, malformed(ipath, "holds %d bytes, want %d", len(idx), count*indexRecordSize)
		}
		var off int64
		for i, l := range lines {
			r := readIndexRecord(idx, i)
			if r.off != off || int(r.n) != len(l) {
				return nil, malformed(ipath, "record %d (offset %d, length %d) does not match line %d of %s (offset %d, length %d)", base+i, r.off, r.n, base+i+1, messagesFile, off, len(l))
			}
			off += int64(len(l))
		}
	}
	msgs := make([]convo.Message, count)
	decode := func(from, to int) error {
		var rec messageRecord // reused: one allocation less per message
		for i := from; i < to; i++ {
			rec = messageRecord{}
			if err := json.Unmarshal(lines[i], &rec); err != nil {
				return malformed(mpath, "line %d: %v", base+i+1, err)
			}
			msgs[i] = rec.message()
			kind, ok := roleKind(msgs[i].Role)
			if !ok {
				return malformed(mpath, "line %d: role %q", base+i+1, msgs[i].Role)
			}
			if idx != nil && readIndexRecord(idx, i).kind != kind {
				return malformed(ipath, "record %d has kind %d, line %d of %s has role %q", base+i, readIndexRecord(idx, i).kind, base+i+1, messagesFile, msgs[i].Role)
			}
		}
		return nil
	}
	workers := runtime.GOMAXPROCS(0)
	if count < 1024 || workers < 2 {
		if err := decode(0, count); err != nil {
			return nil, err
		}
		return msgs, nil
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		from, to := count*w/workers, count*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = decode(from, to)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// parseRuntime decodes the committed bytes of runtime.jsonl.
func parseRuntime(data []byte, count int, file string) ([]RuntimeRecord, error) {
	lines, err := splitLines(data, count, file)
	if err != nil {
		return nil, err
	}
	recs := make([]RuntimeRecord, count)
	for i, l := range lines {
		if err := json.Unmarshal(l, (*runtimeRecord)(&recs[i])); err != nil {
			return nil, malformed(file, "line %d: %v", i+1, err)
		}
		if recs[i].Type == "" {
			return nil, malformed(file, "line %d: runtime record without type", i+1)
		}
	}
	return recs, nil
}

// checkLines is parseMessages without decoding: data holds exactly count
// lines, each matching its index record.
func checkLines(data []byte, base, count int, idx []byte, mpath, ipath string) error {
	lines, err := splitLines(data, count, mpath)
	if err != nil {
		return err
	}
	if len(idx) != count*indexRecordSize {
		return malformed(ipath, "holds %d bytes, want %d", len(idx), count*indexRecordSize)
	}
	var off int64
	for i, l := range lines {
		r := readIndexRecord(idx, i)
		if r.off != off || int(r.n) != len(l) || r.kind < kindUser || r.kind > kindToolResult {
			return malformed(ipath, "record %d (offset %d, length %d, kind %d) does not match line %d of %s", base+i, r.off, r.n, r.kind, base+i+1, messagesFile)
		}
		off += int64(len(l))
	}
	return nil
}
