// Package importer converts other agents' session files into sessions to
// import (store.Imported): Claude Code transcripts and Codex rollouts,
// besides the formats the store reads itself (Loop's JSON export, pi
// JSONL). Convert detects the format from the content. Whatever has no
// place in Loop is kept as import.* runtime records and named in the
// import record's notes (docs/storage.md, "Imported sessions").
package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/store"
)

// Source formats, the import record's "from".
const (
	FormatLoop   = store.ExportFormat
	FormatPi     = "pi-jsonl"
	FormatClaude = "claude-code-jsonl"
	FormatCodex  = "codex-rollout-jsonl"
	// FormatRecovery is a recovery file (docs/storage.md): the engine
	// commits it into its own session instead of converting it.
	FormatRecovery = store.RecoveryFormat
)

// ErrUnknownFormat: the content is none of the formats Convert reads.
var ErrUnknownFormat = errors.New("not a session file of a known format (Loop JSON export, pi JSONL, Claude Code JSONL, Codex rollout JSONL)")

// ErrNoConversation: the file is of a known format but holds nothing to
// import as a session (a Claude Code file with only a title line, a
// subagent's transcript, an empty file). Directory imports pass over it.
var ErrNoConversation = errors.New("no conversation to import")

// Detect names the format of a file's content, or "" for none it reads.
// It looks at the first lines only.
func Detect(data []byte) string {
	if store.IsExport(data) {
		return FormatLoop
	}
	if store.IsRecovery(data) {
		return FormatRecovery
	}
	for i, line := range firstLines(data, 8) {
		var l struct {
			Type      string `json:"type"`
			Payload   raw    `json:"payload"`
			SessionID string `json:"sessionId"`
			LeafUUID  string `json:"leafUuid"`
			UUID      string `json:"uuid"`
		}
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		switch {
		case i == 0 && l.Type == "session" && l.SessionID == "":
			return FormatPi
		case len(l.Payload) > 0 && codexTypes[l.Type]:
			return FormatCodex
		case l.SessionID != "" && (l.UUID != "" || !claudeTree[l.Type]), l.Type == "summary" && l.LeafUUID != "":
			return FormatClaude
		}
	}
	return ""
}

var codexTypes = map[string]bool{"session_meta": true, "response_item": true, "event_msg": true, "turn_context": true, "compacted": true, "world_state": true, "token_usage_record": true}

// Convert turns a session file's bytes, read from path (absolute), into a
// session to import, detecting the format. The session holds nothing of
// data: the caller may let data go before the session is written.
func Convert(data []byte, path string) (store.Imported, error) {
	return ConvertAs(Detect(data), data, path)
}

// ConvertAs is Convert of a file whose format Detect already named.
func ConvertAs(format string, data []byte, path string) (store.Imported, error) {
	switch format {
	case FormatLoop:
		return store.ParseExport(data, path)
	case FormatPi:
		return store.ParsePi(data, path)
	case FormatClaude:
		return convertClaude(data, path)
	case FormatCodex:
		return convertCodex(data, path)
	case FormatRecovery:
		return store.Imported{}, errors.New("a recovery file is committed into its own session (engine.Engine.Import), not converted")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return store.Imported{}, fmt.Errorf("%w: empty file", ErrNoConversation)
	}
	return store.Imported{}, ErrUnknownFormat
}

func firstLines(data []byte, n int) [][]byte {
	var out [][]byte
	for len(data) > 0 && len(out) < n {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// raw is a member of a line: a part of the source's bytes, not a copy, so
// that a long text is copied once, when it is decoded into the message
// that holds it. The source's bytes are never changed while they are
// converted; nothing of the result points into them (Arguments are
// cloned), so they can go before the session is written.
type raw = jsonenc.Raw

// line is one JSON line of a source file.
type line struct {
	n   int // 1-based
	raw []byte
	obj map[string]raw
}

// kept collects what has no place in Loop: runtime records and, for the
// notes, what kinds of things went there.
type kept struct {
	rt       []store.RuntimeRecord
	entries  map[string]int // by kind
	fields   map[string]bool
	unparsed []int
	offPath  int
}

func newKept() *kept { return &kept{entries: map[string]int{}, fields: map[string]bool{}} }

// splitLines parses every line; a line that is not a JSON object is kept
// verbatim as an import.unparsed record.
func (k *kept) splitLines(data []byte, t int64) []line {
	var out []line
	n := 0
	for len(data) > 0 {
		text, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		n++
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		l := line{n: n, raw: text}
		if json.Unmarshal(text, &l.obj) != nil || l.obj == nil {
			k.add(store.RuntimeImportUnparsed, t, map[string]any{"line": n, "text": string(text)})
			k.unparsed = append(k.unparsed, n)
			continue
		}
		out = append(out, l)
	}
	return out
}

func (k *kept) add(typ string, t int64, data any) {
	b, _ := jsonenc.Marshal(data)
	k.rt = append(k.rt, store.RuntimeRecord{Type: typ, Time: t, Data: b})
}

// entry keeps a whole line verbatim; kind names it in the notes. The
// record, {"entry", "line", "offPath"?} as encoding/json would order it,
// is written straight into one buffer: the line may be as long as the
// file.
func (k *kept) entry(l *line, t int64, kind string, offPath bool) {
	d := make([]byte, 0, len(l.raw)+48)
	d = append(d, `{"entry":`...)
	d = appendCompact(d, l.raw)
	d = append(d, `,"line":`...)
	d = strconv.AppendInt(d, int64(l.n), 10)
	if offPath {
		d = append(d, `,"offPath":true`...)
		k.offPath++
	} else {
		k.entries[kind]++
	}
	k.rt = append(k.rt, store.RuntimeRecord{Type: store.RuntimeImportEntry, Time: t, Data: append(d, '}')})
}

// field keeps the members of a line that became message i and have no
// slot in it: {"fields": {name: value, ...}, "line", "messageIndex"}, the
// names sorted, written as entry writes its record.
func (k *kept) field(i int, l *line, t int64, fields map[string]raw) {
	if len(fields) == 0 {
		return
	}
	names := make([]string, 0, len(fields))
	size := 64
	for name, v := range fields {
		k.fields[name] = true
		names = append(names, name)
		size += jsonenc.QuotedLen(name) + len(v) + 1
	}
	sort.Strings(names)
	d := make([]byte, 0, size)
	d = append(d, `{"fields":{`...)
	for j, name := range names {
		if j > 0 {
			d = append(d, ',')
		}
		d = append(jsonenc.AppendString(d, name), ':')
		d = appendCompact(d, fields[name])
	}
	d = append(d, `},"line":`...)
	d = strconv.AppendInt(d, int64(l.n), 10)
	d = append(d, `,"messageIndex":`...)
	d = strconv.AppendInt(d, int64(i), 10)
	k.rt = append(k.rt, store.RuntimeRecord{Type: store.RuntimeImportFields, Time: t, Data: append(d, '}')})
}

// appendCompact appends v, a valid JSON value, without insignificant
// space, as encoding/json writes a raw value.
func appendCompact(dst []byte, v []byte) []byte {
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, v); err != nil {
		// Only parsed values get here; the encoder would fail the same.
		return append(dst, "null"...)
	}
	return buf.Bytes()
}

// notes says where everything that has no place in Loop went.
func (k *kept) notes() []string {
	var notes []string
	if n := len(k.unparsed); n > 0 {
		// The header stays small (docs/storage.md): the first lines only.
		shown := fmt.Sprint(k.unparsed[:min(n, 20)])
		if n > 20 {
			shown = fmt.Sprintf("%s… (%d in all)", shown, n)
		}
		notes = append(notes, fmt.Sprintf("lines %s are not JSON: kept as %s runtime records", shown, store.RuntimeImportUnparsed))
	}
	if k.offPath > 0 {
		notes = append(notes, fmt.Sprintf("%d lines off the conversation's main branch (other branches, subagents): kept as %s runtime records (offPath)", k.offPath, store.RuntimeImportEntry))
	}
	if len(k.entries) > 0 {
		parts := make([]string, 0, len(k.entries))
		for kind, n := range k.entries {
			parts = append(parts, fmt.Sprintf("%d %s", n, kind))
		}
		sort.Strings(parts)
		notes = append(notes, fmt.Sprintf("lines with no place in Loop's history (%s): kept as %s runtime records", strings.Join(parts, ", "), store.RuntimeImportEntry))
	}
	if len(k.fields) > 0 {
		names := make([]string, 0, len(k.fields))
		for n := range k.fields {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) > 40 {
			names = append(names[:40], "…")
		}
		notes = append(notes, fmt.Sprintf("members of message lines with no place in Loop (%s): kept as %s runtime records", strings.Join(names, ", "), store.RuntimeImportFields))
	}
	return notes
}

// without returns obj without the named members (a copy of the map).
func without(obj map[string]raw, names ...string) map[string]raw {
	out := make(map[string]raw, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	for _, n := range names {
		delete(out, n)
	}
	return out
}

// str is the string v holds, "" for any other value.
func str(v raw) string {
	s, _ := jsonenc.DecodeString(v)
	return s
}

// prefix is the start of the string v holds, about n bytes of it: enough
// to tell a harness's text by its first words without decoding the whole
// of a long one.
func prefix(v raw, n int) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	i := 1
	for i < len(v)-1 && i <= n {
		if v[i] == '\\' && i+1 < len(v)-1 && v[i+1] == 'u' {
			i += 6
		} else if v[i] == '\\' {
			i += 2
		} else {
			i++
		}
	}
	if i >= len(v)-1 {
		return str(v)
	}
	cut := make([]byte, 0, i+1)
	cut = append(append(cut, v[:i]...), '"')
	return str(cut)
}

func object(v raw) map[string]raw {
	var m map[string]raw
	if json.Unmarshal(v, &m) != nil {
		return nil
	}
	return m
}

// objects is the array of objects v holds.
func objects(v raw) []map[string]raw {
	var a []map[string]raw
	json.Unmarshal(v, &a)
	return a
}

func parseTime(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}

// abortedReply is the errorMessage of a reply the user stopped: the one
// the engine gives its own (docs/protocol.md, session/abort).
const abortedReply = "Request was aborted"

// interrupt ends the turn in progress of msgs as the user stopped it,
// the way Loop stores a run stopped by session/abort (docs/storage.md,
// "Imported sessions"): the reply being written when the user stopped it
// becomes aborted. That is the last message when it is an assistant reply
// the source gave no stop reason and no tool calls (it was cut while it
// streamed); otherwise (nothing written yet, a reply whose tools ran or
// were stopped) an empty aborted reply of provider and model, at t, closes
// the turn. The stop is never a prompt: no user message comes of it. A
// second marker of the same stop (nothing came after the first) and a
// marker before any message change nothing.
func interrupt(msgs []convo.Message, t int64, provider, model string) []convo.Message {
	n := len(msgs)
	if n == 0 {
		return msgs
	}
	last := &msgs[n-1]
	if last.Role == convo.RoleAssistant {
		if last.StopReason == convo.StopAborted {
			return msgs
		}
		if last.StopReason == "" && !hasToolCall(last) {
			last.StopReason, last.ErrorMessage = convo.StopAborted, abortedReply
			return msgs
		}
	}
	return append(msgs, convo.Message{
		Role: convo.RoleAssistant, Provider: provider, Model: model, Timestamp: t, Content: []convo.Block{},
		StopReason: convo.StopAborted, ErrorMessage: abortedReply,
	})
}

func hasToolCall(m *convo.Message) bool {
	for _, b := range m.Content {
		if b.Type == convo.BlockToolCall {
			return true
		}
	}
	return false
}

// compaction is a checkpoint record (docs/storage.md, runtime.jsonl).
func compactionData(id, summary string, count, tokens int, t int64, details raw) map[string]any {
	d := map[string]any{"id": id, "summary": summary, "messageCount": count, "tokensBefore": tokens, "createdAt": t}
	if len(details) > 0 {
		d["details"] = details
	}
	return d
}
