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
	dst = append(dst, `{"role":`...)
	dst = jsonenc.AppendString(dst, r.Role)
	dst = append(dst, `,"content":`...)
	if r.Content == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = r.Content[i].appendJSON(dst); err != nil {
				return dst, fmt.Errorf("block %d: %w", i, err)
			}
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, r.Timestamp, 10)
	dst = appendMember(dst, `,"requestId":`, r.RequestID)
	if len(r.Skills) > 0 {
		dst = append(dst, `,"skills":[`...)
		for i, s := range r.Skills {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonenc.AppendString(dst, s)
		}
		dst = append(dst, ']')
	}
	dst = appendMember(dst, `,"provider":`, r.Provider)
	dst = appendMember(dst, `,"model":`, r.Model)
	if u := r.Usage; u != nil {
		dst = append(dst, `,"usage":{"input":`...)
		dst = strconv.AppendInt(dst, int64(u.Input), 10)
		dst = append(dst, `,"output":`...)
		dst = strconv.AppendInt(dst, int64(u.Output), 10)
		if u.CacheRead != 0 {
			dst = append(dst, `,"cacheRead":`...)
			dst = strconv.AppendInt(dst, int64(u.CacheRead), 10)
		}
		if u.CacheWrite != 0 {
			dst = append(dst, `,"cacheWrite":`...)
			dst = strconv.AppendInt(dst, int64(u.CacheWrite), 10)
		}
		dst = append(dst, `,"totalTokens":`...)
		dst = strconv.AppendInt(dst, int64(u.TotalTokens), 10)
		dst = append(dst, '}')
	}
	dst = appendMember(dst, `,"stopReason":`, r.StopReason)
	dst = appendMember(dst, `,"errorMessage":`, r.ErrorMessage)
	dst = appendMember(dst, `,"toolCallId":`, r.ToolCallID)
	dst = appendMember(dst, `,"toolName":`, r.ToolName)
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}'), nil
}

func (b *blockRecord) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst = jsonenc.AppendString(dst, b.Type)
	dst = appendMember(dst, `,"text":`, b.Text)
	dst = appendMember(dst, `,"signature":`, b.Signature)
	dst = appendMember(dst, `,"attachment":`, b.Attachment)
	dst = appendMember(dst, `,"data":`, b.Data)
	dst = appendMember(dst, `,"mimeType":`, b.MimeType)
	dst = appendMember(dst, `,"id":`, b.ID)
	dst = appendMember(dst, `,"name":`, b.Name)
	if len(b.Arguments) > 0 {
		dst = append(dst, `,"arguments":`...)
		var err error
		if dst, err = appendCompact(dst, b.Arguments); err != nil {
			return dst, fmt.Errorf("arguments: %w", err)
		}
	}
	return append(dst, '}'), nil
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

// appendMember appends a string member that is left out when empty
// (omitempty); key is `,"name":`.
func appendMember(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return jsonenc.AppendString(append(dst, key...), s)
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
