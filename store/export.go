package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
)

// Loop's JSON export (docs/storage.md, "The JSON export"): one object
// holding a session's header, messages, runtime records and prompt timings
// in the records of the session format, so that every member a header or
// timing gains is exported, and imported back, with no change here.
const (
	ExportFormat  = "loop-export"
	ExportVersion = 1
)

// exportRecord is the JSON export.
type exportRecord struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	ExportedAt int64           `json:"exportedAt"`
	Session    exportHeader    `json:"session"`
	Messages   []messageRecord `json:"messages"`
	Runtime    []runtimeRecord `json:"runtime"`
	Timings    []timingRecord  `json:"timings"`
}

// exportHeader is the header record without the committed range of the
// logs, which describes files, not the session: the shallower members of
// the same names hide the header's, and stay empty (so left out).
type exportHeader struct {
	headerRecord
	MessagesBytes json.RawMessage `json:"messagesBytes,omitempty"`
	MessagesCRC   json.RawMessage `json:"messagesCrc32c,omitempty"`
	RuntimeCount  json.RawMessage `json:"runtimeCount,omitempty"`
	RuntimeBytes  json.RawMessage `json:"runtimeBytes,omitempty"`
	RuntimeCRC    json.RawMessage `json:"runtimeCrc32c,omitempty"`
	TimingsCount  json.RawMessage `json:"timingsCount,omitempty"`
	TimingsBytes  json.RawMessage `json:"timingsBytes,omitempty"`
	TimingsCRC    json.RawMessage `json:"timingsCrc32c,omitempty"`
	PromptTimings json.RawMessage `json:"promptTimings,omitempty"`
}

// exportHeaderOf is the one place a header becomes its exported form.
// An export holds the whole history, a fork's parent part included, so
// it is a session of version 1, without parent or pendingFork
// (docs/storage.md, "The JSON export").
func exportHeaderOf(h *Header) exportHeader {
	rec := headerRecordOf(h)
	rec.Version, rec.Parent, rec.PendingFork = FormatVersion, nil, ""
	return exportHeader{headerRecord: rec}
}

// Contents returns the committed header, messages, runtime records and
// prompt timings, all of one commit. The slices are shared as Messages
// and Timings say.
func (s *Session) Contents() (Header, []convo.Message, []RuntimeRecord, []PromptTiming) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, rt, t := len(s.msgs), len(s.rt), len(s.timings)
	return s.hdr.clone(), s.msgs[:m:m], s.rt[:rt:rt], s.timings[:t:t]
}

// EncodeExport returns the JSON export of a session's contents, made at
// exportedAt (Unix ms). It ends with a newline.
func EncodeExport(h *Header, msgs []convo.Message, rt []RuntimeRecord, timings []PromptTiming, exportedAt int64) ([]byte, error) {
	rec := exportRecord{
		Format: ExportFormat, Version: ExportVersion, ExportedAt: exportedAt,
		Session:  exportHeaderOf(h),
		Messages: make([]messageRecord, len(msgs)),
		Runtime:  make([]runtimeRecord, len(rt)),
		Timings:  recordsOfTimings(timings),
	}
	for i := range msgs {
		rec.Messages[i] = messageRecordOf(&msgs[i])
	}
	for i := range rt {
		rec.Runtime[i] = runtimeRecord(rt[i])
	}
	if rec.Timings == nil {
		rec.Timings = []timingRecord{}
	}
	b, err := jsonenc.Marshal(&rec)
	if err != nil {
		return nil, fmt.Errorf("encode export: %w", err)
	}
	return append(b, '\n'), nil
}

// IsExport reports whether data starts like Loop's JSON export: an object
// whose format member names it. It reads no further than the first
// member's value when that member is "format", as Loop writes it.
func IsExport(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	prefix := []byte(`{"format":"` + ExportFormat + `"`)
	if bytes.HasPrefix(t, prefix) {
		return true
	}
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	var p struct {
		Format string `json:"format"`
	}
	return json.Unmarshal(data, &p) == nil && p.Format == ExportFormat
}

// ParseExport converts a JSON export read from path into a session to
// import: every message, runtime record, timing and header member, as
// exported. The export's own import record, if any, becomes Previous of
// the new one.
func ParseExport(data []byte, path string) (Imported, error) {
	var rec exportRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return Imported{}, fmt.Errorf("%w: %s: not a Loop export: %v", ErrUnsupportedFormat, path, err)
	}
	if rec.Format != ExportFormat {
		return Imported{}, fmt.Errorf("%w: %s: format %q is not %q", ErrUnsupportedFormat, path, rec.Format, ExportFormat)
	}
	if rec.Version != ExportVersion {
		return Imported{}, fmt.Errorf("%w: %s: Loop export version %d (this Loop reads version %d)", ErrUnsupportedFormat, path, rec.Version, ExportVersion)
	}
	h := rec.Session.headerRecord.header()
	if h.Format != FormatName || h.Version != FormatVersion {
		return Imported{}, fmt.Errorf("%w: %s: session format %q version %d", ErrUnsupportedFormat, path, h.Format, h.Version)
	}
	if h.MessageCount != len(rec.Messages) {
		return Imported{}, fmt.Errorf("%w: %s: messageCount %d but %d messages", ErrMalformed, path, h.MessageCount, len(rec.Messages))
	}
	imp := Imported{
		Messages: make([]convo.Message, len(rec.Messages)),
		Runtime:  make([]RuntimeRecord, len(rec.Runtime)),
		Timings:  timingsOfRecords(rec.Timings),
	}
	for i := range rec.Messages {
		imp.Messages[i] = rec.Messages[i].message()
	}
	for i := range rec.Runtime {
		imp.Runtime[i] = RuntimeRecord(rec.Runtime[i])
	}
	mig := &MigrationRecord{From: ExportFormat, SourcePath: path, SourceID: h.ID, SourceVersion: rec.Version}
	if h.Migration != nil {
		// One level: the record the export carried, without the one it
		// kept in turn, so round trips do not grow the header.
		carried := *h.Migration
		carried.Previous = nil
		prev, err := jsonenc.Marshal((*migrationRecord)(&carried))
		if err != nil {
			return Imported{}, fmt.Errorf("%w: %s: import record: %v", ErrMalformed, path, err)
		}
		mig.Previous = prev
	}
	h.Migration = mig
	imp.Header = h
	return imp, nil
}
