package store

import (
	"fmt"

	"github.com/loopdev/loop/internal/jsonenc"
)

// Recovery is a session's unsaved result, written to a recovery file when
// even shutdown could not save it (docs/storage.md). Loop never reads one
// back; people and tools do.
type Recovery struct {
	SessionID   string
	WorkspaceID *string // nil: the independent collection
	Cwd         string
	Error       string // why the save failed
	Header      Header
	Messages    []Message // the whole unsaved history
}

// EncodeRecovery encodes a recovery file: indented JSON, with the header
// and messages as the session format writes them.
func EncodeRecovery(r *Recovery) ([]byte, error) {
	h := headerRecordOf(&r.Header)
	if r.Header.PromptTimings != nil {
		h.PromptTimings = make([]timingRecord, len(r.Header.PromptTimings))
		for i := range r.Header.PromptTimings {
			h.PromptTimings[i] = timingRecord(r.Header.PromptTimings[i])
		}
	}
	rec := recoveryRecord{SessionID: r.SessionID, WorkspaceID: r.WorkspaceID, Cwd: r.Cwd, Error: r.Error, Header: h}
	if r.Messages != nil {
		rec.Messages = make([]messageRecord, len(r.Messages))
		for i := range r.Messages {
			rec.Messages[i] = messageRecordOf(&r.Messages[i])
		}
	}
	b, err := jsonenc.MarshalIndent(&rec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode recovery file: %w", err)
	}
	return b, nil
}
