package turn

import "github.com/loopdev/loop/convo"

// MinSummaryTokens is the least room automatic compaction leaves for a
// summary: less would save a checkpoint too short to stand for the
// conversation it replaces.
const MinSummaryTokens = 256

// Reserve is what is kept free in a model's window for the answer:
// configured when set (config.json compaction.reserveTokens), else a
// quarter of the window, at most the answer's maximum and 16384.
func Reserve(configured, window, maxOutput int) int {
	if configured > 0 {
		return configured
	}
	return min(16384, window/4, maxOutput)
}

// CompactionCut picks where a checkpoint ends: at the last user message
// of hist, so the latest turn stays verbatim. prev is where the latest
// checkpoint ends (0: none); there must be something new to summarize
// since then.
func CompactionCut(hist []convo.Message, prev int) (int, bool) {
	cut := -1
	for i := len(hist) - 1; i > prev; i-- {
		if hist[i].Role == convo.RoleUser {
			cut = i
			break
		}
	}
	if cut < 0 || cut-prev < 2 {
		return 0, false
	}
	return cut, true
}

// Fit is the context budget of one request: Limit, the tokens of the
// model's window left once the answer's reserve is kept; Auto, whether
// automatic compaction is on.
type Fit struct {
	Limit int
	Auto  bool
}

// Verdict is what Fit decides for a request.
type Verdict struct {
	// Send: the request fits.
	Send bool
	// Compact: it would fit after a checkpoint ending at Cut, whose
	// summary may take Room tokens.
	Compact   bool
	Cut, Room int
	// Otherwise it is refused: it needs Tokens (its exact count), and Why
	// says, when compaction was possible, why it would not help.
	Tokens int
	Why    string
}

// Counts is how Fit learns a request's exact counts when its bound is not
// enough: Exact, the request's count; Kept, where a checkpoint would end
// and the count of the request it would leave (Cost.Kept), ok false when
// there is nothing to compact. Each is asked at most once, and only when
// needed, so that a request whose bound fits never loads the tokenizer.
type Counts struct {
	Exact func() int
	Kept  func() (cut, kept int, ok bool)
}

// Decide checks a request whose upper bound is bound against the window
// before it is sent. A request whose bound fits is sent without the exact
// count; otherwise the exact count decides. When automatic compaction is
// on it compacts first, but only when that makes the request fit: the
// messages a checkpoint keeps (the latest user message and what follows
// it) must leave room for a summary (MinSummaryTokens), which is then
// bounded to that room.
func (f Fit) Decide(bound int, c Counts) Verdict {
	if bound <= f.Limit {
		return Verdict{Send: true}
	}
	tokens := c.Exact()
	if tokens <= f.Limit {
		return Verdict{Send: true, Tokens: tokens}
	}
	if !f.Auto {
		return Verdict{Tokens: tokens}
	}
	cut, kept, ok := c.Kept()
	if !ok {
		return Verdict{Tokens: tokens}
	}
	if room := f.Limit - kept; room >= MinSummaryTokens {
		return Verdict{Compact: true, Cut: cut, Room: room, Tokens: tokens}
	}
	return Verdict{Tokens: tokens, Why: "; compacting the earlier conversation would not make it fit"}
}

// Fits is Decide for the request built after a compaction, which is not
// compacted again: its bound, else its exact count, must fit.
func (f Fit) Fits(bound int, exact func() int) (ok bool, tokens int) {
	if bound <= f.Limit {
		return true, 0
	}
	tokens = exact()
	return tokens <= f.Limit, tokens
}
