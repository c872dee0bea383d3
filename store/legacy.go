package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
)

// Runtime record types written by legacy migration.
const (
	RuntimeCompaction     = "compaction"      // {id, summary, messageCount, tokensBefore, createdAt, details?, firstKeptEntryId?, fromHook?, legacy?}
	RuntimeLegacyEntry    = "legacy.entry"    // {line, offPath?, entry}: a pi entry with no place in Loop, verbatim
	RuntimeLegacyFields   = "legacy.fields"   // {messageIndex, entryId, fields}: fields of a migrated message Loop has no slot for
	RuntimeLegacyUnparsed = "legacy.unparsed" // {line, text}: a pi line that is not JSON
)

// MigrateLegacy migrates a pi JSONL session file into the current format in
// the given scope and returns the new session, opened and locked. The
// original file is left untouched. Whatever has no place in Loop (other
// branches, bash executions, custom entries, labels, provider-specific
// fields, unparsable lines) is kept as runtime records and named in the
// header's migration record. The stored cwd is the file's and must exist.
// Migrating the same unchanged file again opens the earlier result: the
// session keeps pi's id when it is a free UUID, else its id derives from
// the file's checksum (docs/storage.md), also when two processes migrate
// the file at once.
func (r *Root) MigrateLegacy(path, workspaceID string) (*Session, error) {
	return r.MigrateLegacyTo(path, workspaceID, "")
}

// MigrateLegacyTo is MigrateLegacy with the session's cwd replaced by cwd
// when it is not empty (the migration record keeps the original).
func (r *Root) MigrateLegacyTo(path, workspaceID, cwd string) (*Session, error) {
	imp, sum, err := r.readLegacy(path)
	if err != nil {
		return nil, err
	}
	s, _, err := r.Import(imp, sum, workspaceID, cwd)
	return s, err
}

// readLegacy reads and parses a pi session file.
func (r *Root) readLegacy(path string) (*Imported, [32]byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("%w: %q: %v", ErrInvalid, path, err)
	}
	data, err := r.fs.ReadFile(abs)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("read legacy session: %w", err)
	}
	imp, err := ParsePi(data, abs)
	if err != nil {
		return nil, [32]byte{}, err
	}
	return &imp, Checksum(data), nil
}

// MigrateLegacyInto is MigrateLegacy into the workspace of dir (an
// existing directory, which becomes the session's cwd), registered only
// once the session is written, as by ImportInto.
func (r *Root) MigrateLegacyInto(path, dir string) (*Session, error) {
	imp, sum, err := r.readLegacy(path)
	if err != nil {
		return nil, err
	}
	s, _, _, err := r.ImportInto(imp, sum, dir)
	return s, err
}

// ParsePi converts the bytes of a pi session file (read from path) into a
// session to import. Whatever has no place in Loop is kept as legacy.*
// runtime records, named in the import record's notes.
func ParsePi(data []byte, path string) (Imported, error) {
	m, err := convertPi(data, path)
	if err != nil {
		return Imported{}, err
	}
	return Imported{Header: m.hdr, Messages: m.msgs, Runtime: m.rt}, nil
}

// migrationNamespace is the UUID namespace of ids derived from a pi file's
// checksum (docs/storage.md).
var migrationNamespace = uuid.MustParse("da81c134-5a93-43e5-a529-518009733310")

// migrationID picks the id of a migration: pi's id (a UUID) when it is
// free, else one derived from the file's checksum, sha (hex SHA-256), so
// that migrating the same version of a file again finds its earlier result.
// found reports such a result: a session with that id migrated from a file
// with this checksum, in scope.
func (r *Root) migrationID(piID, sha string) (id, scope string, found bool, err error) {
	candidates := make([]string, 0, 2)
	if validID(piID) {
		candidates = append(candidates, piID)
	}
	candidates = append(candidates, uuid.NewSHA1(migrationNamespace, []byte(sha)).String())
	for _, id := range candidates {
		scope, err := r.Find(id)
		if errors.Is(err, ErrSessionNotFound) && !errors.Is(err, ErrUnsupportedFormat) {
			return id, "", false, nil
		}
		if err != nil && !errors.Is(err, ErrUnsupportedFormat) {
			return "", "", false, err
		}
		if err == nil {
			if h, err := r.ReadHeader(scope, id); err == nil && h.Migration != nil && h.Migration.SourceSHA256 == sha {
				return id, scope, true, nil
			}
		}
		// Taken by another session (or another program's): next.
	}
	return newID(), "", false, nil
}

type piMigration struct {
	hdr     Header
	msgs    []convo.Message
	rt      []RuntimeRecord
	origCwd string
}

// piEntry is one parsed line of a pi session file. raw and fields are
// parts of the file's bytes, not copies (jsonenc.Raw): a long message is
// copied once, into the Message that holds it; nothing of the result
// points into the file's bytes (arguments are cloned).
type piEntry struct {
	line     int // 1-based
	raw      jsonenc.Raw
	fields   map[string]jsonenc.Raw
	typ      string
	id       string
	parentID string
	hasID    bool
	time     int64
}

// convertPi turns a pi session file into Loop's messages, runtime records
// and header (without id, scope and range).
func convertPi(data []byte, path string) (piMigration, error) {
	var m piMigration
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(bytes.TrimSpace(lines[len(lines)-1])) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return m, fmt.Errorf("%w: %s: empty file, not a pi session", ErrUnsupportedFormat, path)
	}
	var head map[string]jsonenc.Raw
	if err := json.Unmarshal(lines[0], &head); err != nil || jsonString(head["type"]) != "session" {
		return m, fmt.Errorf("%w: %s: first line is not a pi session header", ErrUnsupportedFormat, path)
	}
	version := 1
	if v, ok := head["version"]; ok {
		if err := json.Unmarshal(v, &version); err != nil {
			return m, fmt.Errorf("%w: %s: pi header version %s", ErrUnsupportedFormat, path, v)
		}
	}
	if version < 1 || version > 3 {
		return m, fmt.Errorf("%w: %s: pi session version %d", ErrUnsupportedFormat, path, version)
	}
	created := parseISO(jsonString(head["timestamp"]))
	m.origCwd = jsonString(head["cwd"])
	rec := &MigrationRecord{From: "pi-jsonl", SourcePath: path, SourceID: jsonString(head["id"]), SourceVersion: version}
	var extraHead []string
	for k := range head {
		switch k {
		case "type", "version", "id", "timestamp", "cwd":
		default:
			extraHead = append(extraHead, fmt.Sprintf("%s=%s", k, head[k]))
		}
	}
	sort.Strings(extraHead)
	if len(extraHead) > 0 {
		rec.Notes = append(rec.Notes, "header fields not kept: "+strings.Join(extraHead, ", "))
	}

	var entries []*piEntry
	var unparsed []int
	for i, l := range lines[1:] {
		lineNo := i + 2
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		e := &piEntry{line: lineNo, raw: l}
		if err := json.Unmarshal(l, &e.fields); err != nil || e.fields == nil {
			text, _ := jsonenc.Marshal(string(l))
			data, _ := jsonenc.Marshal(map[string]any{"line": lineNo, "text": json.RawMessage(text)})
			m.rt = append(m.rt, RuntimeRecord{Type: RuntimeLegacyUnparsed, Time: created, Data: data})
			unparsed = append(unparsed, lineNo)
			continue
		}
		e.typ = jsonString(e.fields["type"])
		e.id = jsonString(e.fields["id"])
		_, e.hasID = e.fields["id"]
		e.parentID = jsonString(e.fields["parentId"])
		e.time = parseISO(jsonString(e.fields["timestamp"]))
		if e.time == 0 {
			e.time = created
		}
		entries = append(entries, e)
	}
	if len(unparsed) > 0 {
		rec.Notes = append(rec.Notes, fmt.Sprintf("lines %v are not JSON: kept as %s runtime records", unparsed, RuntimeLegacyUnparsed))
	}

	// pi's entries form a tree; its current branch runs from the last entry
	// (the leaf) up to the root. Entries without ids (version 1) are linear.
	onPath := make(map[*piEntry]bool, len(entries))
	if n := len(entries); n > 0 && entries[n-1].hasID {
		byID := make(map[string]*piEntry, n)
		for _, e := range entries {
			if e.hasID {
				byID[e.id] = e
			}
		}
		for e := entries[n-1]; e != nil && !onPath[e]; e = byID[e.parentID] {
			onPath[e] = true
		}
	} else {
		for _, e := range entries {
			onPath[e] = true
		}
	}

	keepEntry := func(e *piEntry, offPath bool) {
		d := map[string]any{"line": e.line, "entry": e.raw}
		if offPath {
			d["offPath"] = true
		}
		data, _ := jsonenc.Marshal(d)
		m.rt = append(m.rt, RuntimeRecord{Type: RuntimeLegacyEntry, Time: e.time, Data: data})
	}
	// A header setting (model, effort, title) takes the last such entry on
	// the branch; earlier ones, and the members the last one does not map,
	// are kept verbatim.
	lastSetting := map[string]*piEntry{}
	for _, e := range entries {
		if _, ok := settingFields[e.typ]; ok && onPath[e] {
			lastSetting[e.typ] = e
		}
	}
	var offPath int
	kept := map[string]int{}
	fieldNames := map[string]bool{}
	entryFieldNames := map[string]bool{}
	msgIndexByEntry := map[string]int{}
	m.hdr.CreatedAt, m.hdr.UpdatedAt = created, created
	for _, e := range entries {
		if !onPath[e] {
			keepEntry(e, true)
			offPath++
			continue
		}
		if mapped, ok := settingFields[e.typ]; ok {
			switch {
			case lastSetting[e.typ] != e:
				keepEntry(e, false)
				kept["superseded "+e.typ]++
				continue
			case hasOtherFields(e.fields, mapped):
				keepEntry(e, false)
				kept[e.typ+" with other members"]++
			}
		}
		switch e.typ {
		case "message":
			msg, extra, ok := convertPiMessage(e.fields["message"])
			if !ok {
				keepEntry(e, false)
				kept["message role "+piRole(e.fields["message"])]++
				continue
			}
			if e.hasID {
				msgIndexByEntry[e.id] = len(m.msgs)
			}
			entryExtra := map[string]jsonenc.Raw{}
			for k, v := range e.fields {
				switch k {
				case "type", "id", "parentId", "timestamp", "message":
				default:
					entryExtra[k] = v
					entryFieldNames[k] = true
				}
			}
			if len(extra) > 0 || len(entryExtra) > 0 {
				for k := range extra {
					fieldNames[k] = true
				}
				d := map[string]any{"messageIndex": len(m.msgs), "entryId": e.id, "fields": extra}
				if len(entryExtra) > 0 {
					d["entryFields"] = entryExtra
				}
				data, _ := jsonenc.Marshal(d)
				m.rt = append(m.rt, RuntimeRecord{Type: RuntimeLegacyFields, Time: e.time, Data: data})
			}
			if msg.Role == convo.RoleUser || msg.Role == convo.RoleAssistant {
				m.hdr.UpdatedAt = max(m.hdr.UpdatedAt, msg.Timestamp)
			}
			m.msgs = append(m.msgs, msg)
		case "model_change":
			m.hdr.Model = &ModelRef{Provider: jsonString(e.fields["provider"]), ID: jsonString(e.fields["modelId"])}
		case "thinking_level_change":
			m.hdr.Effort = jsonString(e.fields["thinkingLevel"])
		case "session_info":
			m.hdr.Title = jsonString(e.fields["name"])
			m.hdr.TitleSource = TitleManual
			if m.hdr.Title == "" {
				m.hdr.TitleSource = ""
			}
		case "compaction":
			// The summarized messages are those before firstKeptEntryId on
			// the branch; if pi's entry is not a message, count up to the
			// next message after it.
			count := len(m.msgs)
			if first := jsonString(e.fields["firstKeptEntryId"]); first != "" {
				count = firstKeptCount(entries, onPath, first, msgIndexByEntry, len(m.msgs))
			}
			var tokens int
			json.Unmarshal(e.fields["tokensBefore"], &tokens)
			d := map[string]any{
				"id": e.id, "summary": jsonString(e.fields["summary"]), "messageCount": count,
				"tokensBefore": tokens, "createdAt": e.time, "legacy": true,
			}
			for _, k := range []string{"details", "firstKeptEntryId", "fromHook"} {
				if v, ok := e.fields[k]; ok {
					d[k] = v
				}
			}
			data, _ := jsonenc.Marshal(d)
			m.rt = append(m.rt, RuntimeRecord{Type: RuntimeCompaction, Time: e.time, Data: data})
			m.hdr.Compaction = &CompactionMeta{ID: e.id, MessageCount: count, TokensBefore: tokens, CreatedAt: e.time}
		default:
			keepEntry(e, false)
			kept[e.typ]++
		}
	}
	if offPath > 0 {
		rec.Notes = append(rec.Notes, fmt.Sprintf("%d entries off the current branch: kept as %s runtime records (offPath)", offPath, RuntimeLegacyEntry))
	}
	if len(kept) > 0 {
		var parts []string
		for k, n := range kept {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
		sort.Strings(parts)
		rec.Notes = append(rec.Notes, fmt.Sprintf("entries with no place in Loop's history (%s): kept as %s runtime records", strings.Join(parts, ", "), RuntimeLegacyEntry))
	}
	if len(fieldNames) > 0 {
		rec.Notes = append(rec.Notes, fmt.Sprintf("message fields with no place in Loop (%s): kept as %s runtime records", sortedKeys(fieldNames), RuntimeLegacyFields))
	}
	if len(entryFieldNames) > 0 {
		rec.Notes = append(rec.Notes, fmt.Sprintf("message entry members with no place in Loop (%s): kept as %s runtime records (entryFields)", sortedKeys(entryFieldNames), RuntimeLegacyFields))
	}
	m.hdr.Cwd = m.origCwd
	m.hdr.UserMessageCount = countUsers(m.msgs)
	m.hdr.Migration = rec
	return m, nil
}

// settingFields are the pi entries that set a header field, with the
// members Loop maps (besides type, id, parentId and timestamp).
var settingFields = map[string][]string{
	"model_change":          {"provider", "modelId"},
	"thinking_level_change": {"thinkingLevel"},
	"session_info":          {"name"},
}

// hasOtherFields reports whether a setting entry has a member Loop does not
// map, or a mapped one that is not a string.
func hasOtherFields(fields map[string]jsonenc.Raw, mapped []string) bool {
	for k, v := range fields {
		switch {
		case k == "type" || k == "id" || k == "parentId" || k == "timestamp":
		case slices.Contains(mapped, k):
			var s *string
			if json.Unmarshal(v, &s) != nil {
				return true
			}
		default:
			return true
		}
	}
	return false
}

func sortedKeys(set map[string]bool) string {
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// firstKeptCount returns how many migrated messages come before entry id
// on the branch.
func firstKeptCount(entries []*piEntry, onPath map[*piEntry]bool, id string, msgIndex map[string]int, fallback int) int {
	found := false
	for _, e := range entries {
		if !onPath[e] {
			continue
		}
		if e.id == id {
			found = true
		}
		if found {
			if i, ok := msgIndex[e.id]; ok {
				return i
			}
		}
	}
	// No migrated message follows it yet: everything so far is summarized.
	return fallback
}

func piRole(raw jsonenc.Raw) string {
	var r struct{ Role string }
	json.Unmarshal(raw, &r)
	if r.Role == "" {
		return "(none)"
	}
	return r.Role
}

// convertPiMessage maps a pi AgentMessage to a Message. ok is false for
// roles Loop's history has no place for (bashExecution, custom, ...). extra
// holds the fields that did not map, by JSON path.
func convertPiMessage(raw jsonenc.Raw) (msg convo.Message, extra map[string]jsonenc.Raw, ok bool) {
	var f map[string]jsonenc.Raw
	if json.Unmarshal(raw, &f) != nil {
		return msg, nil, false
	}
	msg.Role = jsonString(f["role"])
	if _, known := roleKind(msg.Role); !known {
		return msg, nil, false
	}
	extra = map[string]jsonenc.Raw{}
	take := func(k string, dst any) {
		if v, ok := f[k]; ok {
			if json.Unmarshal(v, dst) != nil {
				extra[k] = v
			}
			delete(f, k)
		}
	}
	delete(f, "role")
	take("timestamp", &msg.Timestamp)
	if c, ok := f["content"]; ok {
		delete(f, "content")
		if s, ok := jsonenc.DecodeString(c); ok {
			msg.Content = []convo.Block{{Type: convo.BlockText, Text: s}}
		} else if string(c) == "null" {
			// As json.Unmarshal leaves a string for null: no text.
			msg.Content = []convo.Block{{Type: convo.BlockText}}
		} else {
			var blocks []map[string]jsonenc.Raw
			if json.Unmarshal(c, &blocks) != nil {
				extra["content"] = c
			}
			for i, b := range blocks {
				blk, ok := convertPiBlock(b)
				prefix := fmt.Sprintf("content[%d]", i)
				if !ok {
					v, _ := jsonenc.Marshal(b)
					extra[prefix] = v
					continue
				}
				for k, v := range b {
					extra[prefix+"."+k] = v
				}
				msg.Content = append(msg.Content, blk)
			}
		}
	}
	if msg.Content == nil {
		msg.Content = []convo.Block{}
	}
	switch msg.Role {
	case convo.RoleAssistant:
		take("provider", &msg.Provider)
		take("model", &msg.Model)
		take("stopReason", &msg.StopReason)
		take("errorMessage", &msg.ErrorMessage)
		if u, ok := f["usage"]; ok {
			delete(f, "usage")
			var uf map[string]jsonenc.Raw
			if json.Unmarshal(u, &uf) != nil {
				extra["usage"] = u
				break
			}
			var usage convo.Usage
			for k, dst := range map[string]*int{"input": &usage.Input, "output": &usage.Output, "cacheRead": &usage.CacheRead, "cacheWrite": &usage.CacheWrite, "totalTokens": &usage.TotalTokens} {
				if v, ok := uf[k]; ok {
					if json.Unmarshal(v, dst) != nil {
						extra["usage."+k] = v
					}
					delete(uf, k)
				}
			}
			for k, v := range uf {
				extra["usage."+k] = v
			}
			msg.Usage = &usage
		}
	case convo.RoleToolResult:
		take("toolCallId", &msg.ToolCallID)
		take("toolName", &msg.ToolName)
		take("isError", &msg.IsError)
	}
	for k, v := range f {
		extra[k] = v
	}
	return msg, extra, true
}

// convertPiBlock maps one pi content block; the fields it uses are deleted
// from b, leaving the ones with no place in Loop.
func convertPiBlock(b map[string]jsonenc.Raw) (convo.Block, bool) {
	// A member that is not a string (or null) stays in b: it is kept as a
	// field with no place in Loop, not dropped.
	str := func(k string) string {
		v, ok := b[k]
		if !ok {
			return ""
		}
		if string(v) == "null" {
			delete(b, k)
			return ""
		}
		s, ok := jsonenc.DecodeString(v)
		if ok {
			delete(b, k)
		}
		return s
	}
	switch jsonString(b["type"]) {
	case "text":
		delete(b, "type")
		return convo.Block{Type: convo.BlockText, Text: str("text")}, true
	case "thinking":
		delete(b, "type")
		return convo.Block{Type: convo.BlockThinking, Text: str("thinking"), Signature: str("thinkingSignature")}, true
	case "image":
		delete(b, "type")
		return convo.Block{Type: convo.BlockImage, Data: str("data"), MimeType: str("mimeType")}, true
	case "toolCall":
		delete(b, "type")
		// A copy: the message outlives the file's bytes.
		args := json.RawMessage(bytes.Clone(b["arguments"]))
		delete(b, "arguments")
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		return convo.Block{Type: convo.BlockToolCall, ID: str("id"), Name: str("name"), Arguments: args}, true
	}
	return convo.Block{}, false
}

func jsonString(raw []byte) string {
	s, _ := jsonenc.DecodeString(raw)
	return s
}

func parseISO(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
