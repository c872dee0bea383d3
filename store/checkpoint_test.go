package store

import (
	"encoding/json"
	"testing"
)

// A checkpoint is committed as one: its record in the runtime log and its
// metadata in the header, with the caller's own edit, and it reads back
// from a reopened session as it was.
func TestCommitCheckpointWritesItsRecordAndItsHeaderTogether(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustCommit(t, s, history(1), nil, nil)
	cp := Checkpoint{ID: "cp", Summary: "they <asked> & got", MessageCount: 4, TokensBefore: 900, CreatedAt: 1795972385500}
	if err := s.CommitCheckpoint(history(2), &cp, func(h *Header) { h.Title = "edited" }); err != nil {
		t.Fatal(err)
	}
	h := s.Header()
	if h.Compaction == nil || *h.Compaction != *cp.Meta() || h.Title != "edited" || h.MessageCount != 8 {
		t.Errorf("header: compaction %+v, title %q, %d messages", h.Compaction, h.Title, h.MessageCount)
	}
	rt := s.Runtime()
	if len(rt) != 1 || rt[0].Type != RuntimeCompaction || rt[0].Time != cp.CreatedAt ||
		string(rt[0].Data) != `{"id":"cp","summary":"they <asked> & got","messageCount":4,"tokensBefore":900,"createdAt":1795972385500}` {
		t.Errorf("runtime log: %+v (data %s)", rt, rt[0].Data)
	}
	o := reopen(t, r, s)
	if got := LatestCheckpoint(o.Runtime()); got == nil || *got != cp {
		t.Errorf("reopened: checkpoint %+v, want %+v", got, cp)
	}
	if got := o.Header().Compaction; got == nil || *got != *cp.Meta() {
		t.Errorf("reopened: header's compaction %+v", got)
	}
}

// The latest checkpoint is the newest compaction record with a summary;
// records of other types, records that are not a checkpoint's JSON and
// records without a summary stand for nothing, and a migrated checkpoint's
// further members are ignored.
func TestLatestCheckpointIsTheNewestCompactionWithASummary(t *testing.T) {
	migrated := RuntimeRecord{Type: RuntimeCompaction, Time: 5, Data: json.RawMessage(
		`{"createdAt":5,"details":{"x":1},"firstKeptEntryId":"e1","id":"m1","legacy":true,"messageCount":3,"summary":"old","tokensBefore":614}`)}
	rt := []RuntimeRecord{
		{Type: RuntimeCompaction, Time: 1, Data: json.RawMessage(`{"id":"first","summary":"first","messageCount":2}`)},
		migrated,
		{Type: RuntimeCompaction, Time: 6, Data: json.RawMessage(`{"id":"empty","summary":"","messageCount":9}`)},
		{Type: RuntimeCompaction, Time: 7, Data: json.RawMessage(`[1,2]`)},
		{Type: RuntimeCompaction, Time: 8},
		{Type: RuntimeLegacyFields, Time: 9, Data: json.RawMessage(`{"summary":"not a checkpoint"}`)},
	}
	want := Checkpoint{ID: "m1", Summary: "old", MessageCount: 3, TokensBefore: 614, CreatedAt: 5}
	if got := LatestCheckpoint(rt); got == nil || *got != want {
		t.Errorf("LatestCheckpoint = %+v, want %+v", got, want)
	}
	if got := LatestCheckpoint(rt[2:]); got != nil {
		t.Errorf("LatestCheckpoint of records without a summary = %+v, want none", got)
	}
	if got := LatestCheckpoint(nil); got != nil {
		t.Errorf("LatestCheckpoint(nil) = %+v", got)
	}
}
