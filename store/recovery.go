package store

import (
	"fmt"

	"github.com/loopdev/loop/convo"
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
	// Timings are written as the header's promptTimings, as recovery
	// files have always held them.
	Timings  []PromptTiming
	Messages []convo.Message // the whole unsaved history
	// Usage is the session's whole usage ledger, the calls Header.Usage
	// lacks included: what the unsaved run cost is otherwise lost.
	Usage convo.SessionUsage
}

// EncodeRecovery encodes a recovery file: indented JSON, with the header
// and messages as the session format writes them.
func EncodeRecovery(r *Recovery) ([]byte, error) {
	h := headerRecordOf(&r.Header)
	// The header holds the timings themselves, as headers did before
	// timings.jsonl: it names no records of that file, so a reader of
	// either format finds exactly these timings.
	h.PromptTimings = recordsOfTimings(r.Timings)
	h.TimingsCount, h.TimingsBytes, h.TimingsCRC = 0, 0, 0
	rec := recoveryRecord{SessionID: r.SessionID, WorkspaceID: r.WorkspaceID, Cwd: r.Cwd, Error: r.Error, Header: h, Usage: sessionUsageRecordOf(&r.Usage)}
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
