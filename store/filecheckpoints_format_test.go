package store

import (
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/loopdev/loop/store/internal/fsys"
)

// A restore's records (its pre-images and its end, marked restore with
// the history's checksum) read back as written, their content with them,
// and a rewrite of the log keeps them; a dropped record names the
// restores it dropped.
func TestARestoresCheckpointRecordsRoundTrip(t *testing.T) {
	_, _, _, ck := newCheckpointSession(t)
	pre, err := ck.RestorePreImage("restore1", 6, 0xdeadbeef, "a.txt", fileStateOf("id-a"), []byte("alpha\n"))
	if err != nil {
		t.Fatal(err)
	}
	end := CheckpointRecord{RunID: "restore1", Start: 6, End: 6, Restore: true, MessagesCRC: 0xdeadbeef,
		Files: []FileChange{{Path: "a.txt", Pre: pre, Post: fileStateOf("id-b")}}}
	if err := ck.EndRun(end); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		recs, err := ck.Records()
		if err != nil || len(recs) < 2 {
			t.Fatalf("%s: records %+v %v", when, recs, err)
		}
		recs = recs[len(recs)-2:]
		p, e := recs[0], recs[1]
		if p.Kind != CheckpointPre || !p.Restore || p.MessagesCRC != 0xdeadbeef || p.RunID != "restore1" || p.Start != 6 || p.Path != "a.txt" {
			t.Fatalf("%s: pre-image %+v", when, p)
		}
		if e.Kind != CheckpointEnd || !e.Restore || e.MessagesCRC != 0xdeadbeef || e.Start != 6 || e.End != 6 || len(e.Files) != 1 || e.Files[0].Post != end.Files[0].Post {
			t.Fatalf("%s: end %+v", when, e)
		}
		for _, st := range []FileState{p.State, e.Files[0].Pre} {
			if got, err := ck.Content(st); err != nil || string(got) != "alpha\n" {
				t.Fatalf("%s: content %q %v", when, got, err)
			}
		}
	}
	check("written")
	recs, _ := ck.Records()
	dropped := []RestorePoint{{Start: 2, MessagesCRC: 9}, {Start: 0, MessagesCRC: 0}}
	if err := ck.Rewrite(recs, 2, []DroppedRun{{RunID: "r1", Start: 2}}, dropped...); err != nil {
		t.Fatal(err)
	}
	check("rewritten")
	// The dropped record names the restores dropped.
	recs, err = ck.Records()
	if err != nil || recs[0].Kind != CheckpointDropped || recs[0].Start != 2 || !reflect.DeepEqual(recs[0].Restores, dropped) || len(recs[0].Dropped) != 1 || recs[0].Dropped[0].RunID != "r1" {
		t.Fatalf("dropped record: %+v %v", recs[0], err)
	}
}

// A log written before restores were recorded as runs of their own (its
// restore records carry only the states left) reads as it did: the
// records, their content, and no restore marks.
func TestACheckpointLogOfThePreviousFormatReadsUnchanged(t *testing.T) {
	_, _, _, ck := newCheckpointSession(t)
	content := "alpha\n"
	line1 := fmt.Sprintf(`{"type":"pre","run":"r1","start":0,"path":"a.txt","state":{"exists":true,"mode":33188,"id":"id-a","size":6,"where":"log"},"inline":6,"crc":%d}`, fsys.CRC32C(0, []byte(content)))
	off := int64(len(line1) + 1)
	log := line1 + "\n" + content +
		fmt.Sprintf(`{"type":"end","run":"r1","start":0,"end":4,"files":[{"path":"a.txt","pre":{"exists":true,"mode":33188,"id":"id-a","size":6,"where":"log","off":%d},"post":{"exists":true,"mode":33188,"id":"id-b"}}]}`, off) + "\n" +
		`{"type":"restore","start":0,"files":[{"path":"a.txt","pre":{"exists":false},"post":{"exists":true,"mode":33188,"id":"id-a"}}]}` + "\n" +
		`{"type":"dropped","start":0}` + "\n"
	if err := os.MkdirAll(ck.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(checkpointLog(ck.Dir()), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	a := FileState{Exists: true, Mode: ModeFile, ID: "id-a", Size: 6, Where: ContentLog, Off: off}
	want := []CheckpointRecord{
		{Kind: CheckpointPre, RunID: "r1", Path: "a.txt", State: a},
		{Kind: CheckpointEnd, RunID: "r1", End: 4, Files: []FileChange{{Path: "a.txt", Pre: a, Post: FileState{Exists: true, Mode: ModeFile, ID: "id-b"}}}},
		{Kind: CheckpointRestore, Files: []FileChange{{Path: "a.txt", Post: FileState{Exists: true, Mode: ModeFile, ID: "id-a"}}}},
		{Kind: CheckpointDropped},
	}
	recs, err := ck.Records()
	if err != nil || !reflect.DeepEqual(recs, want) {
		t.Fatalf("records:\n%+v\nwant\n%+v\n%v", recs, want, err)
	}
	if got, err := ck.Content(recs[1].Files[0].Pre); err != nil || string(got) != content {
		t.Fatalf("content %q %v", got, err)
	}
	// A new record follows them, and they read the same.
	if _, err := ck.RestorePreImage("restore1", 4, 7, "a.txt", fileStateOf("id-a"), []byte(content)); err != nil {
		t.Fatal(err)
	}
	recs, err = ck.Records()
	if err != nil || len(recs) != 5 || !reflect.DeepEqual(recs[:4], want) || recs[4].State.Off != off {
		t.Fatalf("after a new record: %+v %v", recs, err)
	}
}
