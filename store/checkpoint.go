package store

import (
	"encoding/json"
	"math"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
)

// Checkpoint is a compaction checkpoint: in model input, the messages
// before MessageCount are replaced by Summary; the original messages stay
// in the history untouched. It is kept as a compaction record of the
// runtime log (docs/storage.md, "runtime.jsonl"), and the header's
// CompactionMeta names the latest.
type Checkpoint struct {
	ID           string
	Summary      string
	MessageCount int
	TokensBefore int
	CreatedAt    int64 // Unix ms
}

// CommitCheckpoint commits msgs as Commit does, with cp: its record in the
// runtime log and its metadata in the header, which edit (if not nil) may
// change further.
func (s *Session) CommitCheckpoint(msgs []convo.Message, cp *Checkpoint, edit func(*Header)) error {
	return s.Commit(msgs, []RuntimeRecord{cp.Record()}, func(h *Header) {
		h.Compaction = cp.Meta()
		if edit != nil {
			edit(h)
		}
	})
}

// Record is c as the runtime record that keeps it.
func (c *Checkpoint) Record() RuntimeRecord {
	data, _ := jsonenc.Marshal(checkpointRecord(*c)) // strings and numbers: cannot fail
	return RuntimeRecord{Type: RuntimeCompaction, Time: c.CreatedAt, Data: data}
}

// Meta is what the header keeps of c.
func (c *Checkpoint) Meta() *CompactionMeta {
	return &CompactionMeta{ID: c.ID, MessageCount: c.MessageCount, TokensBefore: c.TokensBefore, CreatedAt: c.CreatedAt}
}

// LatestCheckpoint returns the newest compaction record of rt that holds a
// summary and that no later rewind dropped (CheckpointAt), or nil when
// there is none. A record that is not a checkpoint's JSON, or has no
// summary, stands for nothing; members the record has besides (those of a
// migrated checkpoint) are ignored.
func LatestCheckpoint(rt []RuntimeRecord) *Checkpoint {
	return CheckpointAt(rt, math.MaxInt)
}

// parseCheckpoint is the checkpoint a compaction record's data holds, nil
// when it holds none.
func parseCheckpoint(data json.RawMessage) *Checkpoint {
	var r checkpointRecord
	if json.Unmarshal(data, &r) == nil && r.Summary != "" {
		cp := Checkpoint(r)
		return &cp
	}
	return nil
}
