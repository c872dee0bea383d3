package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/loopdev/loop/internal/jsonenc"
)

// The log lines (messages.jsonl, runtime.jsonl) are written by hand into
// the batch's one buffer, byte for byte as encoding/json writes these
// records without HTML escaping (TestRecordLinesMatchEncodingJSON fills
// every field). encoding/json would encode each line into a buffer of its
// own that grows step by step and is then copied out: for one message of
// 150 MB that is over a gigabyte of allocations and several copies alive
// at once (docs/performance.md, "Import").

// appendJSON appends r as one JSON object, without a newline. It fails
// only for arguments that are not valid JSON.
func (r *messageRecord) appendJSON(dst []byte) ([]byte, error) {
	e := lineEnc{buf: dst}
	r.encode(&e)
	return e.buf, e.err
}

// encode writes r as one JSON object, without a newline, into e.
func (r *messageRecord) encode(e *lineEnc) {
	e.raw(`{"role":`)
	e.str(r.Role)
	e.raw(`,"content":`)
	if r.Content == nil {
		e.raw("null")
	} else {
		e.raw("[")
		for i := range r.Content {
			if i > 0 {
				e.raw(",")
			}
			if err := r.Content[i].encode(e); err != nil {
				e.fail(fmt.Errorf("block %d: %w", i, err))
				return
			}
		}
		e.raw("]")
	}
	e.raw(`,"timestamp":`)
	e.buf = strconv.AppendInt(e.buf, r.Timestamp, 10)
	e.member(`,"requestId":`, r.RequestID)
	if len(r.Skills) > 0 {
		e.raw(`,"skills":[`)
		for i, s := range r.Skills {
			if i > 0 {
				e.raw(",")
			}
			e.str(s)
		}
		e.raw("]")
	}
	e.member(`,"provider":`, r.Provider)
	e.member(`,"model":`, r.Model)
	if u := r.Usage; u != nil {
		e.raw(`,"usage":{"input":`)
		e.buf = strconv.AppendInt(e.buf, int64(u.Input), 10)
		e.raw(`,"output":`)
		e.buf = strconv.AppendInt(e.buf, int64(u.Output), 10)
		if u.CacheRead != 0 {
			e.raw(`,"cacheRead":`)
			e.buf = strconv.AppendInt(e.buf, int64(u.CacheRead), 10)
		}
		if u.CacheWrite != 0 {
			e.raw(`,"cacheWrite":`)
			e.buf = strconv.AppendInt(e.buf, int64(u.CacheWrite), 10)
		}
		e.raw(`,"totalTokens":`)
		e.buf = strconv.AppendInt(e.buf, int64(u.TotalTokens), 10)
		e.raw("}")
	}
	e.member(`,"stopReason":`, r.StopReason)
	e.member(`,"errorMessage":`, r.ErrorMessage)
	e.member(`,"toolCallId":`, r.ToolCallID)
	e.member(`,"toolName":`, r.ToolName)
	if r.IsError {
		e.raw(`,"isError":true`)
	}
	e.raw("}")
}

func (b *blockRecord) encode(e *lineEnc) error {
	e.raw(`{"type":`)
	e.str(b.Type)
	e.member(`,"text":`, b.Text)
	e.member(`,"signature":`, b.Signature)
	e.member(`,"attachment":`, b.Attachment)
	e.member(`,"data":`, b.Data)
	e.member(`,"mimeType":`, b.MimeType)
	e.member(`,"id":`, b.ID)
	e.member(`,"name":`, b.Name)
	if len(b.Arguments) > 0 {
		e.raw(`,"arguments":`)
		var err error
		if e.buf, err = appendCompact(e.buf, b.Arguments); err != nil {
			return fmt.Errorf("arguments: %w", err)
		}
		e.spill()
	}
	e.raw("}")
	return nil
}

// appendJSON appends r as one JSON object, without a newline. It fails
// only for data that is not valid JSON.
func (r *runtimeRecord) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst = jsonenc.AppendString(dst, r.Type)
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, r.Time, 10)
	if len(r.Data) > 0 {
		dst = append(dst, `,"data":`...)
		var err error
		if dst, err = appendCompact(dst, r.Data); err != nil {
			return dst, fmt.Errorf("data: %w", err)
		}
	}
	return append(dst, '}'), nil
}

// appendCompact appends raw JSON without insignificant space, as
// encoding/json writes a json.RawMessage, or fails when it is not valid.
func appendCompact(dst, raw []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}
