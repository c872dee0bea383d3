package trace

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/loopdev/loop/internal/regfile"
)

// Trace is a trace directory read back.
type Trace struct {
	Dir     string
	Records []Record // in the order written
	// Segments are the segment numbers present, ascending.
	Segments []int
	// Truncated: the oldest segments were dropped by the size bound, so
	// the trace no longer starts at the session's first prompt.
	Truncated bool
	// Incomplete: records were lost (a write failed, the disk fell behind)
	// or the last line was cut short (the process died writing it).
	Incomplete bool
	// Lost is the reason of the first incomplete record: records went
	// missing between others (a write failed, the disk fell behind), not
	// only at the end. "" when none did.
	Lost string
	// Unfinished names the first step (a prompt, resume, compact or title
	// record) of a version 3 segment whose end record the trace lacks: the
	// process ended before the step did, or before the step's last records
	// reached the disk (killed within the flush delay, a disk full until
	// it exited), which no record can say. "" when every such step ended.
	Unfinished string

	version int      // of the segment being read
	open    []Record // steps of version 3 segments not ended yet, in order
}

// Header is the first trace record (the session's identity).
func (t *Trace) Header() Record {
	for _, r := range t.Records {
		if r.Type == TypeTrace {
			return r
		}
	}
	return Record{}
}

// maxSegmentBytes bounds one segment as it is read (whole): a segment is
// a quarter of its session's bound, or one record larger than that; the
// same bound as an import's source.
const maxSegmentBytes = 512 << 20

// readDir lists dir, which must be a directory: opening a FIFO to list it
// would wait for a writer forever.
func readDir(dir string) ([]os.DirEntry, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	return os.ReadDir(dir)
}

// IsDir reports whether dir holds trace segments.
func IsDir(dir string) bool {
	entries, err := readDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, ok := segmentNumber(e.Name()); ok {
			return true
		}
	}
	return false
}

// Read reads every segment of dir in order. A last line cut short (the
// process died while writing it) is ignored; any other unreadable line is
// an error.
func Read(dir string) (*Trace, error) {
	entries, err := readDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	t := &Trace{Dir: dir}
	for _, e := range entries {
		if n, ok := segmentNumber(e.Name()); ok {
			t.Segments = append(t.Segments, n)
		}
	}
	if len(t.Segments) == 0 {
		return nil, fmt.Errorf("read trace: %s holds no trace segments", dir)
	}
	sort.Ints(t.Segments)
	t.Truncated = t.Segments[0] != 1
	for _, n := range t.Segments {
		if err := t.readSegment(filepath.Join(dir, SegmentName(n))); err != nil {
			return nil, err
		}
	}
	if len(t.open) > 0 {
		t.Unfinished = stepName(t.open[0]) + " has no end record"
	}
	t.open = nil
	return t, nil
}

// note keeps track of the steps of version 3 segments and their ends.
func (t *Trace) note(r *Record) {
	switch r.Type {
	case TypePrompt, TypeResume, TypeCompact, TypeTitle:
		if t.version >= 3 {
			t.open = append(t.open, *r)
		}
	case TypeEnd:
		for i, o := range t.open {
			if o.Type == r.Step && o.RunID == r.RunID {
				t.open = append(t.open[:i], t.open[i+1:]...)
				break
			}
		}
	}
}

// stepName names a step record for people.
func stepName(r Record) string {
	run := ""
	if r.RunID != "" {
		run = " (run " + r.RunID + ")"
	}
	switch r.Type {
	case TypePrompt:
		return "prompt " + r.RequestID + run
	case TypeResume:
		return "resume" + run
	case TypeCompact:
		return "a compaction asked for"
	default:
		return "a title asked for"
	}
}

func (t *Trace) readSegment(path string) error {
	// A segment is a file of a directory someone may have handed over (a
	// bug report): a FIFO or a device is refused unread, as an import's
	// source is.
	data, err := regfile.Read(path, maxSegmentBytes)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("read trace: %w", err) // it names the path
	case err != nil:
		return fmt.Errorf("read trace: %s: %w", filepath.Base(path), err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	line := 0
	t.version = 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			if !bytes.HasSuffix(data, []byte("\n")) && int64(len(data)) == int64(bytes.LastIndex(data, b)+len(b)) {
				t.Incomplete = true
				return nil
			}
			return fmt.Errorf("read trace: %s line %d: %w", filepath.Base(path), line, err)
		}
		if r.Type == TypeIncomplete {
			t.Incomplete = true
			if t.Lost == "" {
				t.Lost = cmp.Or(r.Reason, "records were lost")
			}
		}
		if r.Type == TypeTrace && (r.Version < 1 || r.Version > Version) {
			// Another format's records could read as this one's and replay
			// into a wrong verdict.
			return fmt.Errorf("read trace: %s is of trace format version %d; this loop reads versions 1 to %d", filepath.Base(path), r.Version, Version)
		}
		if r.Type == TypeTrace {
			t.version = r.Version
		}
		t.note(&r)
		if r.Type == TypeEvents {
			if t.Records, err = expandEvents(t.Records, &r); err != nil {
				return fmt.Errorf("read trace: %s line %d: %w", filepath.Base(path), line, err)
			}
			continue
		}
		t.Records = append(t.Records, r)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read trace: %s: %w", filepath.Base(path), err)
	}
	return nil
}

// ErrNoTrace: the session has no trace.
var ErrNoTrace = errors.New("no trace")
