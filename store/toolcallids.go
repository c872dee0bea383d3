package store

import (
	"sort"
	"strconv"
)

// A history keeps each tool call's id as the provider gave it, because the
// provider must get it back to pair a call with its result. Providers that
// number their calls afresh in every reply (call_1 on every turn) repeat
// ids within one session, and clients need each call of a session to have
// an id of its own (ACP requires it). ToolCallIDs derives those ids from
// the history alone, so that a session loaded again gets the ids it had
// live; the history is append-only (compaction keeps it whole), so an id
// never changes once given. docs/storage.md, "Tool call ids", states the
// rule.

// ToolCallIDs gives the tool calls of one history ids unique within it:
// the provider's id when no earlier call or result of the history holds
// it, else that id with "-2", "-3", ... appended (the first such id that is
// free). A tool result gets the id of the call it answers: the unanswered
// call with its provider id in the latest message that has one (the first
// such call of that message); a result that answers no call gets an id of
// its own by the same rule as a call. Add the history's messages in order;
// the zero value is ready for the first.
type ToolCallIDs struct {
	n       int                   // messages added
	taken   map[string]struct{}   // every id given so far
	next    map[string]int        // per base id, the suffix to try next
	open    map[string][]openCall // calls not answered yet, by provider id, in history order
	renamed []RenamedCall
}

type openCall struct {
	msg int    // history index of the call's message
	id  string // its unique id
}

// RenamedCall is a tool call id of a history that differs from the
// provider's: the call block Block of message Message, or, with Block -1,
// the ToolCallID of tool result Message.
type RenamedCall struct {
	Message int
	Block   int
	ID      string
}

// Add derives the ids of the next message of the history.
func (t *ToolCallIDs) Add(m *Message) {
	i := t.n
	t.n++
	switch m.Role {
	case RoleAssistant:
		for b := range m.Content {
			blk := &m.Content[b]
			if blk.Type != BlockToolCall {
				continue
			}
			id := t.claim(blk.ID)
			if t.open == nil {
				t.open = map[string][]openCall{}
			}
			t.open[blk.ID] = append(t.open[blk.ID], openCall{msg: i, id: id})
			if id != blk.ID {
				t.renamed = append(t.renamed, RenamedCall{Message: i, Block: b, ID: id})
			}
		}
	case RoleToolResult:
		id, ok := t.answer(m.ToolCallID)
		if !ok {
			id = t.claim(m.ToolCallID)
		}
		if id != m.ToolCallID {
			t.renamed = append(t.renamed, RenamedCall{Message: i, Block: -1, ID: id})
		}
	}
}

// Renamed returns the ids that differ from the provider's, in history
// order. The slice is shared: later Adds append past its end and never
// change what it holds, so it may be kept and read without a lock.
func (t *ToolCallIDs) Renamed() []RenamedCall {
	return t.renamed[:len(t.renamed):len(t.renamed)]
}

// Draft returns the ids the tool calls among blocks (a reply still
// streaming, the next message of the history) will get when it is added,
// aligned with blocks ("" for other blocks). It changes nothing.
func (t *ToolCallIDs) Draft(blocks []Block) []string {
	out := make([]string, len(blocks))
	var mine map[string]struct{}
	for b := range blocks {
		if blocks[b].Type != BlockToolCall {
			continue
		}
		id, _ := t.unique(blocks[b].ID, mine)
		if mine == nil {
			mine = map[string]struct{}{}
		}
		mine[id] = struct{}{}
		out[b] = id
	}
	return out
}

// PublishIDs replaces the provider's ids in msgs, whose first message has
// history index from, by the unique ones renamed lists (a Renamed of the
// same history). msgs must be the caller's own copy: blocks are changed in
// place.
func PublishIDs(msgs []Message, from int, renamed []RenamedCall) {
	k := sort.Search(len(renamed), func(k int) bool { return renamed[k].Message >= from })
	for ; k < len(renamed) && renamed[k].Message < from+len(msgs); k++ {
		r := renamed[k]
		m := &msgs[r.Message-from]
		switch {
		case r.Block < 0:
			m.ToolCallID = r.ID
		case r.Block < len(m.Content):
			m.Content[r.Block].ID = r.ID
		}
	}
}

// claim gives the next call (or unpaired result) with provider id pid its
// unique id.
func (t *ToolCallIDs) claim(pid string) string {
	id, next := t.unique(pid, nil)
	if t.taken == nil {
		t.taken = map[string]struct{}{}
	}
	t.taken[id] = struct{}{}
	if next > 0 {
		if t.next == nil {
			t.next = map[string]int{}
		}
		t.next[base(pid)] = next
	}
	return id
}

// unique is the id claim would give pid, also avoiding the ids in mine;
// next is the suffix to try after it (0 when the id has none).
func (t *ToolCallIDs) unique(pid string, mine map[string]struct{}) (id string, next int) {
	free := func(id string) bool {
		_, a := t.taken[id]
		_, b := mine[id]
		return !a && !b
	}
	b := base(pid)
	if free(b) {
		return b, 0
	}
	n := max(t.next[b], 2)
	for ; !free(b + "-" + strconv.Itoa(n)); n++ {
	}
	return b + "-" + strconv.Itoa(n), n + 1
}

// base is what a unique id starts from: the provider's id, or "call" for a
// call the provider gave none.
func base(pid string) string {
	if pid == "" {
		return "call"
	}
	return pid
}

// answer pairs a tool result with provider id pid with the call it
// answers and returns that call's id.
func (t *ToolCallIDs) answer(pid string) (string, bool) {
	calls := t.open[pid]
	if len(calls) == 0 {
		return "", false
	}
	latest := calls[len(calls)-1].msg
	k := len(calls) - 1
	for k > 0 && calls[k-1].msg == latest {
		k--
	}
	id := calls[k].id
	calls = append(calls[:k], calls[k+1:]...)
	if len(calls) == 0 {
		delete(t.open, pid)
	} else {
		t.open[pid] = calls
	}
	return id, true
}
