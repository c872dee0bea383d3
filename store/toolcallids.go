package store

import (
	"sort"
	"strconv"

	"github.com/loopdev/loop/convo"
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
func (t *ToolCallIDs) Add(m *convo.Message) {
	i := t.n
	t.n++
	switch m.Role {
	case convo.RoleAssistant:
		for b := range m.Content {
			blk := &m.Content[b]
			if blk.Type != convo.BlockToolCall {
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
	case convo.RoleToolResult:
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

// DraftCalls names the tool calls of a reply still streaming, the next
// message of the history, with the ids they get when it is added: the
// same, as long as the added message has the same calls in the same order.
// Calls are named as their blocks open, each in constant time in the
// usual case (blocks open in order), so a reply of many calls costs no
// more than its length.
type DraftCalls struct {
	t      *ToolCallIDs
	pids   []string // the provider's ids, by block
	isCall []bool
	ids    []string // the unique ids, by block ("" for other blocks)
	last   int      // the highest block named
	mine   map[string]struct{}
	next   map[string]int
}

// Draft starts naming the calls of the next message. The history must
// not grow while the draft is in use.
func (t *ToolCallIDs) Draft() *DraftCalls { return &DraftCalls{t: t, last: -1} }

// Name names the tool call that opens block b, with provider id pid, and
// returns its id.
func (d *DraftCalls) Name(b int, pid string) string {
	for len(d.pids) <= b {
		d.pids, d.isCall, d.ids = append(d.pids, ""), append(d.isCall, false), append(d.ids, "")
	}
	d.pids[b], d.isCall[b] = pid, true
	if b > d.last {
		d.last = b
		d.ids[b] = d.pick(pid)
		return d.ids[b]
	}
	// A block named out of order, or again: name them all anew, in
	// block order, as Add will.
	d.mine, d.next = nil, nil
	for i := range d.pids {
		if d.isCall[i] {
			d.ids[i] = d.pick(d.pids[i])
		}
	}
	return d.ids[b]
}

// IDs returns the ids named so far, by block ("" for blocks that are not
// calls). The slice is the draft's own: copy what is kept.
func (d *DraftCalls) IDs() []string { return d.ids }

// pick is claim for a draft: the id the call gets, after the draft's
// earlier calls.
func (d *DraftCalls) pick(pid string) string {
	id, next := d.t.unique(pid, d.mine, d.next[base(pid)])
	if d.mine == nil {
		d.mine = map[string]struct{}{}
	}
	d.mine[id] = struct{}{}
	if next > 0 {
		if d.next == nil {
			d.next = map[string]int{}
		}
		d.next[base(pid)] = next
	}
	return id
}

// PublishIDs replaces the provider's ids in msgs, whose first message has
// history index from, by the unique ones renamed lists (a Renamed of the
// same history). msgs must be the caller's own copy: blocks are changed in
// place.
func PublishIDs(msgs []convo.Message, from int, renamed []RenamedCall) {
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
	id, next := t.unique(pid, nil, 0)
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

// unique is the id claim would give pid, also avoiding the ids in mine
// and trying no suffix below from; next is the suffix to try after it (0
// when the id has none).
func (t *ToolCallIDs) unique(pid string, mine map[string]struct{}, from int) (id string, next int) {
	free := func(id string) bool {
		_, a := t.taken[id]
		_, b := mine[id]
		return !a && !b
	}
	b := base(pid)
	if free(b) {
		return b, 0
	}
	n := max(t.next[b], from, 2)
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
