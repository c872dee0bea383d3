package tui

import "time"

// What the chat sends the UI (Program.Send): each is shown in the order
// sent.
type (
	// Say is a line (or lines) of Loop's own, not the model's.
	Say struct {
		Text string
		Kind Kind
	}
	// UserLine is a prompt that starts now (one typed at an idle prompt
	// shows as it is sent; a queued one when its turn comes).
	UserLine struct{ Text string }
	// Delta is more of the answer being streamed, as Markdown.
	Delta struct{ Text string }
	// AnswerEnd ends the answer being streamed.
	AnswerEnd struct{}
	// ToolStart and ToolEnd are a tool call and its folded result.
	ToolStart struct{ Line string }
	ToolEnd   struct {
		OK   bool
		Line string
	}
	// Busy says that a run (or a compaction) is active, or no longer.
	Busy struct{ On bool }
	// Notice is shown beside the spinner until the answer goes on: a
	// retried request ("HTTP 500, retrying in 2 s, attempt 2 of 4").
	Notice struct{ Text string }
	// Ask is an approval: one key answers it (y, a, n). With YesNo it is
	// a question of Loop's own, answered y (AllowOnce) or n (Reject), or
	// put away with Esc or Ctrl-C (Cancel).
	Ask struct {
		Title  string // the call, in one line; the question, with YesNo
		Reason string
		Diff   string // what a write or edit changes, as a unified diff
		Answer func(Decision)
		YesNo  bool
	}
	// Withdraw takes a pending approval back (its run ended).
	Withdraw struct{}
	// Transcript is a conversation so far, shown when it is opened.
	Transcript struct{ Items []Item }
	// Pick opens the session picker.
	Pick struct{ Items []PickItem }
	// Quit ends the program.
	Quit struct{}
)

// Kind is how a Say line looks.
type Kind int

const (
	Info Kind = iota
	Error
	Plain
)

// Decision is the answer to an Ask.
type Decision int

const (
	AllowOnce Decision = iota
	AllowSession
	Reject
	// Cancel is Esc or Ctrl-C at a yes-or-no question: neither answer,
	// the command that asked does nothing.
	Cancel
)

// Item is one entry of a Transcript.
type Item struct {
	Role string // "user", "assistant", "tool" or "info"
	Text string
	OK   bool // a tool result's outcome
}

// PickItem is a session in the picker.
type PickItem struct {
	ID        string
	Title     string // the title, or a preview of the first message
	Updated   time.Time
	Messages  int
	Workspace string // its directory, "" for an independent chat
	Snippet   string // what matched a search
}

// App is what the person does, handed to the chat. Submit and Exit are
// called on the UI's goroutine and must not block; Search runs on a
// goroutine of its own.
type App interface {
	// Submit is a line sent with Enter: a prompt or a slash command.
	Submit(text string)
	// Interrupt stops the active run; false when there is none.
	Interrupt() bool
	// Exit is Ctrl-D on an empty input, or a second Ctrl-C at an idle one.
	Exit()
	// Commands are the slash commands, for Tab completion.
	Commands() []string
	// Search lists sessions for the picker: all of them for "", else those
	// whose messages match the query.
	Search(query string) []PickItem
	// Open opens the session picked.
	Open(id string)
}
