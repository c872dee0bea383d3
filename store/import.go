package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"unicode/utf8"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
)

// Runtime record types written by imports from other agents' formats
// (docs/storage.md, "Imported sessions"). pi migrations keep writing the
// legacy.* records of legacy.go.
const (
	RuntimeImportEntry    = "import.entry"    // {line, entry, offPath?}: a source line with no place in Loop, verbatim
	RuntimeImportFields   = "import.fields"   // {messageIndex, line, fields}: members of a source line that became a message and have no slot in it
	RuntimeImportUnparsed = "import.unparsed" // {line, text}: a source line that is not JSON
	RuntimeImportRecord   = "import.record"   // {record, header?}: the whole import record (and header strings) when header.json holds them shortened
)

// Bounds on what an import puts in header.json, which stays under 4 KB
// (docs/storage.md, "Imported sessions"): the notes, the source's own
// strings and the carried record come from the source file, so any of
// them can be as long as it is.
const (
	maxNoteBytes     = 200 // one note
	maxNotesBytes    = 600 // all notes together
	maxSourceBytes   = 100 // sourceId, sourceApp
	maxFieldBytes    = 64  // model provider and id, effort, permission, compaction id
	maxPreviousBytes = 320 // the carried import record
	maxTitleRunes    = 200 // as the engine bounds the titles it sets
)

// Imported is a session converted from another format, before it is
// written: what Root.Import stores as a new session.
type Imported struct {
	// Header holds the metadata: Cwd, times, title, model, effort,
	// permission, flags, the compaction checkpoint, and Migration (the
	// import record; From, SourceID and Notes at least). Import sets the
	// format, id, scope and committed range.
	Header   Header
	Messages []convo.Message
	Runtime  []RuntimeRecord
	Timings  []PromptTiming
}

// Import writes imp as a new session of workspaceID and returns it, opened
// and locked; existed reports that an earlier import of the same source
// (the same id and checksum, sum) was found instead, and that one is
// returned. cwd, when not empty, replaces the session's directory (the
// import record notes the original). The session keeps the source's id
// when it is a free UUID, else its id derives from the checksum
// (docs/storage.md), also when two processes import the source at once.
func (r *Root) Import(imp *Imported, sum [32]byte, workspaceID, cwd string) (s *Session, existed bool, err error) {
	return r.importTo(imp, sum, cwd, func() (string, error) { return workspaceID, nil })
}

// ImportInto is Import into the workspace of dir, an existing directory,
// which also becomes the session's cwd. The workspace is registered (or
// brought back, when it was removed) only once the session is written: a
// source the store refuses, or one found from an earlier import, leaves
// the registry untouched (docs/storage.md, "Workspace registry"). ws is
// zero when existed.
func (r *Root) ImportInto(imp *Imported, sum [32]byte, dir string) (s *Session, ws Workspace, existed bool, err error) {
	canon, err := canonicalDir(dir)
	if err != nil {
		return nil, Workspace{}, false, err
	}
	s, existed, err = r.importTo(imp, sum, canon, func() (string, error) { return r.reserveWorkspace(canon) })
	if err != nil || existed {
		return s, Workspace{}, existed, err
	}
	if ws, err = r.AddWorkspace(canon, ""); err != nil {
		// The session is on disk, in the reserved scope: adding the
		// directory later brings it back with its workspace.
		s.Close()
		return nil, Workspace{}, false, err
	}
	return s, ws, false, nil
}

// importTo is Import with the scope given by scope, called only once the
// session is known to be new and valid, just before it is written.
func (r *Root) importTo(imp *Imported, sum [32]byte, cwd string, scope func() (string, error)) (s *Session, existed bool, err error) {
	if imp.Header.Migration == nil {
		return nil, false, fmt.Errorf("%w: an import needs its import record", ErrInvalid)
	}
	mig := *imp.Header.Migration
	mig.SourceSHA256 = hex.EncodeToString(sum[:])
	mig.MigratedAt = r.nowMs()
	h := imp.Header.clone()
	if cwd != "" {
		if abs := absOrEmpty(cwd); abs != h.Cwd {
			mig.Notes = append(mig.Notes, fmt.Sprintf("cwd %s replaced by %s", h.Cwd, abs))
			h.Cwd = abs
		}
	}
	h.Migration = &mig
	runtime := imp.Runtime
	if rec, ok := boundImport(&h); ok {
		// The whole record stays with the session, as a runtime record.
		runtime = append(slices.Clip(runtime), rec)
	}
	if err := checkCwd(h.Cwd); err != nil {
		return nil, false, fmt.Errorf("import %s: %w", mig.SourcePath, err)
	}
	// Another import of the same source may publish the id first: then
	// the lookup finds its result.
	for attempt := 1; ; attempt++ {
		id, found, ok, err := r.migrationID(mig.SourceID, mig.SourceSHA256)
		if err != nil {
			return nil, false, err
		}
		if ok {
			s, err := r.Open(found, id)
			return s, true, err
		}
		s, err := r.createImported(h, imp, runtime, scope, id)
		if errors.Is(err, errSessionExists) && attempt < 3 {
			continue
		}
		return s, false, err
	}
}

// Checksum is the SHA-256 of a source file's bytes: with the source's own
// id, what identifies an import (Root.Import).
func Checksum(data []byte) [32]byte { return sha256.Sum256(data) }

// createImported writes the converted session under id, in the scope that
// scope returns once everything the store checks is known to be valid.
func (r *Root) createImported(h Header, imp *Imported, runtime []RuntimeRecord, scope func() (string, error), id string) (*Session, error) {
	src := h.Migration.SourcePath
	h.Format, h.Version, h.ID, h.WorkspaceID = FormatName, FormatVersion, id, nil
	b, err := encodeBatch(imp.Messages, 0, 0, runtime)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	for i := range imp.Timings {
		tm := &imp.Timings[i]
		err := tm.validate()
		if err == nil {
			err = tm.within(len(imp.Messages))
		}
		if err != nil {
			return nil, fmt.Errorf("import %s: %w: timing %d: %v", src, ErrInvalid, i, err)
		}
	}
	if b.timings, err = encodeTimings(indexed(imp.Timings)); err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	setRange(&h, b, len(imp.Messages), len(runtime), len(imp.Timings), &Header{})
	if err := h.validate(); err != nil {
		return nil, fmt.Errorf("import %s: %w: %v", src, ErrInvalid, err)
	}
	workspaceID, err := scope()
	if err != nil {
		return nil, err
	}
	dir, err := r.sessionDir(workspaceID, id)
	if err != nil {
		return nil, err
	}
	h.WorkspaceID = wsPtr(workspaceID)
	s := &Session{id: id, fs: r.fs, now: r.now, kind: draft, dir: dir, hdr: h}
	s.feed = r.feed()
	s.taken = s.feed.taken(0)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.createOnDisk(imp.Messages, runtime, imp.Timings, h, b); err != nil {
		return nil, fmt.Errorf("import %s: %w", src, err)
	}
	return s, nil
}

// CwdExists reports whether dir is an existing directory: an import whose
// source names a directory that is gone joins another (docs/cli.md).
func CwdExists(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// boundImport shortens what h holds of the source past the bounds above:
// each note, the notes together, sourceId, sourceApp, the carried record,
// the title, the model, effort, permission and compaction id. When it
// shortens anything it returns an import.record runtime record with the
// whole record and the whole of each header string it cut, named in a
// last note, so nothing of the source is dropped silently.
func boundImport(h *Header) (RuntimeRecord, bool) {
	m := h.Migration
	full := *m
	cut := false
	shorten := func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		cut = true
		return truncateUTF8(s, n-len("…")) + "…"
	}
	m.SourceID = shorten(m.SourceID, maxSourceBytes)
	m.SourceApp = shorten(m.SourceApp, maxSourceBytes)
	if len(m.Previous) > maxPreviousBytes {
		m.Previous, cut = nil, true
	}
	// The header's own strings the source gave: the whole of each one
	// that is cut goes into the runtime record.
	wholes := map[string]string{}
	field := func(name string, p *string, n int) {
		if v := *p; len(v) > n {
			wholes[name] = v
			*p = shorten(v, n)
		}
	}
	if r := []rune(h.Title); len(r) > maxTitleRunes {
		wholes["title"] = h.Title
		h.Title, cut = string(r[:maxTitleRunes-1])+"…", true
	}
	field("effort", &h.Effort, maxFieldBytes)
	field("permission", &h.Permission, maxFieldBytes)
	if h.Model != nil {
		field("model.provider", &h.Model.Provider, maxFieldBytes)
		field("model.id", &h.Model.ID, maxFieldBytes)
	}
	if h.Compaction != nil {
		field("compaction.id", &h.Compaction.ID, maxFieldBytes)
	}
	var notes []string
	total := 0
	for i, n := range m.Notes {
		n = shorten(n, maxNoteBytes)
		if total+len(n) > maxNotesBytes {
			notes, cut = append(notes, fmt.Sprintf("… %d more notes", len(m.Notes)-i)), true
			break
		}
		notes = append(notes, n)
		total += len(n)
	}
	if !cut {
		return RuntimeRecord{}, false
	}
	m.Notes = append(notes, fmt.Sprintf("the import record is shortened here: the whole of it is the %s runtime record", RuntimeImportRecord))
	data := struct {
		Record *migrationRecord  `json:"record"`
		Header map[string]string `json:"header,omitempty"`
	}{Record: (*migrationRecord)(&full), Header: wholes}
	b, err := jsonenc.Marshal(&data)
	if err != nil {
		// Strings and raw JSON the importer made always encode.
		b = []byte("{}")
	}
	return RuntimeRecord{Type: RuntimeImportRecord, Time: m.MigratedAt, Data: b}, true
}

// truncateUTF8 returns the longest prefix of s of at most n bytes that
// does not cut a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// within checks that a timing's message range falls inside a history of
// n messages, as the engine's timings do: the file being imported could
// name any range, and readers walk the ranges timings name.
func (t *PromptTiming) within(n int) error {
	start, end := t.MessageStartIndex, t.MessageEndIndex
	switch {
	case start.Set && start.Value > n, end.Set && end.Value > n:
		return fmt.Errorf("messages [%d, %d) outside a history of %d", start.Value, end.Value, n)
	case start.Set && end.Set && start.Value > end.Value:
		return fmt.Errorf("messageStartIndex %d after messageEndIndex %d", start.Value, end.Value)
	}
	return nil
}
