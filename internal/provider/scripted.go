package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/blockjson"
	"github.com/loopdev/loop/internal/jsonenc"
)

// Scripted is a deterministic model that replays a JSON script (the format
// is in docs/configuration.md). NewScripted and NewScriptedFromBytes
// return it as a Provider; tests may assert it to *Scripted to look at the
// requests it received.
type Scripted struct {
	name  string
	dir   string // relative file names in steps resolve against it
	turns []scriptTurn
	log   string // request log file, "" for none

	mu       sync.Mutex
	used     []bool
	requests []Request
}

type scriptFile struct {
	Log   string       `json:"log"`
	Turns []scriptTurn `json:"turns"`
}

type scriptTurn struct {
	Match      string       `json:"match"`
	Purpose    string       `json:"purpose"`
	Steps      []scriptStep `json:"steps"`
	Usage      *scriptUsage `json:"usage"`
	StopReason string       `json:"stopReason"`
}

type scriptStep struct {
	Text      *string         `json:"text"`
	Thinking  *string         `json:"thinking"`
	Signature string          `json:"signature"` // with thinking
	ToolCall  *scriptToolCall `json:"toolCall"`
	WaitFile  string          `json:"waitFile"`
	TouchFile string          `json:"touchFile"`
	Hang      bool            `json:"hang"`
	SleepMs   int             `json:"sleepMs"`
	Error     string          `json:"error"`
	Status    int             `json:"status"`    // with error: an HTTP error of this status
	Retryable bool            `json:"retryable"` // with error
	Truncate  bool            `json:"truncate"`
}

type scriptToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// NewScripted reads a script file. Files named by waitFile, touchFile and
// log resolve against the script's directory.
func NewScripted(path string) (Provider, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read model script: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("model script %s: %w", path, err)
	}
	s, err := parseScript(data, filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("model script %s: %w", path, err)
	}
	return s, nil
}

// NewScriptedFromBytes reads a script from memory. Relative file names in
// it resolve against the process's working directory.
func NewScriptedFromBytes(data []byte) (Provider, error) {
	s, err := parseScript(data, "")
	if err != nil {
		return nil, fmt.Errorf("model script: %w", err)
	}
	return s, nil
}

func parseScript(data []byte, dir string) (*Scripted, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f scriptFile
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	for i, t := range f.Turns {
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("turn %d: %w", i+1, err)
		}
	}
	s := &Scripted{name: APIScripted, dir: dir, turns: f.Turns, used: make([]bool, len(f.Turns))}
	if f.Log != "" {
		s.log = s.path(f.Log)
	}
	return s, nil
}

func (t *scriptTurn) check() error {
	switch t.StopReason {
	case "", convo.StopEnd, convo.StopLength, convo.StopToolUse:
	default:
		return fmt.Errorf("stopReason %q: want stop, length or toolUse", t.StopReason)
	}
	switch t.Purpose {
	case PurposeMain, PurposeTitle, PurposeSummary:
	default:
		return fmt.Errorf("purpose %q: want title, summary or none", t.Purpose)
	}
	for j, st := range t.Steps {
		n := 0
		for _, set := range []bool{st.Text != nil, st.Thinking != nil, st.ToolCall != nil, st.WaitFile != "",
			st.TouchFile != "", st.Hang, st.SleepMs > 0, st.Error != "", st.Truncate} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("step %d: want exactly one of text, thinking, toolCall, waitFile, touchFile, hang, sleepMs, error, truncate", j+1)
		}
		if st.ToolCall != nil {
			if st.ToolCall.Name == "" {
				return fmt.Errorf("step %d: toolCall needs a name", j+1)
			}
			if a := st.ToolCall.Arguments; len(a) > 0 && !json.Valid(a) {
				return fmt.Errorf("step %d: toolCall arguments are not JSON", j+1)
			}
		}
	}
	return nil
}

func (s *Scripted) path(name string) string {
	if filepath.IsAbs(name) || s.dir == "" {
		return name
	}
	return filepath.Join(s.dir, name)
}

// Requests returns the requests received so far, oldest first.
func (s *Scripted) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Remaining returns how many turns are still unused.
func (s *Scripted) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, u := range s.used {
		if !u {
			n++
		}
	}
	return n
}

// pick takes the first unused turn, in file order, whose purpose equals
// the request's and whose match (if any) occurs in the text of the last
// user message. A request that continues after tool results picks the
// same way: the last user message is still the prompt.
func (s *Scripted) pick(req Request) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	last := lastUserText(req.Messages)
	turn := -1
	for i, t := range s.turns {
		if !s.used[i] && t.Purpose == req.Purpose && strings.Contains(last, t.Match) {
			s.used[i], turn = true, i
			break
		}
	}
	if err := s.writeLog(req, turn); err != nil {
		return -1, err
	}
	if turn < 0 {
		purpose := ""
		if req.Purpose != "" {
			purpose = " for purpose " + req.Purpose
		}
		return -1, &Error{Kind: KindScript, Message: fmt.Sprintf(
			"model script exhausted: no unused turn%s matches the last user message %q", purpose, shorten(last, 80))}
	}
	return turn, nil
}

func lastUserText(msgs []convo.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == convo.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// scriptLogEntry is one line of the request log: what the model was sent,
// for tests that run Loop as a separate process.
type scriptLogEntry struct {
	Turn            int             `json:"turn"` // 1-based; 0 when no turn was left
	Model           string          `json:"model"`
	Purpose         string          `json:"purpose,omitempty"`
	Effort          string          `json:"effort,omitempty"`
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	System          string          `json:"system"`
	Tools           []string        `json:"tools"`
	Messages        []scriptMessage `json:"messages"`
}

// scriptMessage is a history message in the request log, with the member
// names of the protocol's Message (docs/protocol.md 4.4), which scenarios
// match; its blocks are the form traces write (internal/blockjson), and
// its usage has exactly the fields of convo's, so both convert. It has a
// field for each of convo.Message's (TestScriptLogCarriesEveryMessageField).
type scriptMessage struct {
	Role         string            `json:"role"`
	Content      []blockjson.Block `json:"content"`
	Timestamp    int64             `json:"timestamp"`
	RequestID    string            `json:"requestId,omitempty"`
	Skills       []string          `json:"skills,omitempty"`
	Provider     string            `json:"provider,omitempty"`
	Model        string            `json:"model,omitempty"`
	Usage        *scriptUsage      `json:"usage,omitempty"`
	StopReason   string            `json:"stopReason,omitempty"`
	ErrorMessage string            `json:"errorMessage,omitempty"`
	ToolCallID   string            `json:"toolCallId,omitempty"`
	ToolName     string            `json:"toolName,omitempty"`
	IsError      bool              `json:"isError,omitempty"`
}

// scriptUsage is a turn's usage in the script, and a message's in the log.
type scriptUsage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead,omitempty"`
	CacheWrite  int `json:"cacheWrite,omitempty"`
	TotalTokens int `json:"totalTokens"`
}

func scriptMessages(msgs []convo.Message) []scriptMessage {
	if msgs == nil {
		return nil
	}
	out := make([]scriptMessage, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		out[i] = scriptMessage{Role: m.Role, Timestamp: m.Timestamp, RequestID: m.RequestID, Skills: m.Skills,
			Provider: m.Provider, Model: m.Model, Usage: (*scriptUsage)(m.Usage), StopReason: m.StopReason,
			ErrorMessage: m.ErrorMessage, ToolCallID: m.ToolCallID, ToolName: m.ToolName, IsError: m.IsError}
		if m.Content != nil {
			out[i].Content = make([]blockjson.Block, len(m.Content))
			for j := range m.Content {
				out[i].Content[j] = blockjson.Block(m.Content[j])
			}
		}
	}
	return out
}

func (s *Scripted) writeLog(req Request, turn int) error {
	if s.log == "" {
		return nil
	}
	e := scriptLogEntry{Turn: turn + 1, Model: req.Model, Purpose: req.Purpose, Effort: req.Effort,
		MaxOutputTokens: req.MaxOutputTokens, System: req.System, Tools: []string{}, Messages: scriptMessages(req.Messages)}
	for _, t := range req.Tools {
		e.Tools = append(e.Tools, t.Name)
	}
	line, err := jsonenc.Marshal(e)
	if err != nil {
		return &Error{Kind: KindScript, Message: "request log: " + err.Error(), Err: err}
	}
	f, err := os.OpenFile(s.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return &Error{Kind: KindScript, Message: "request log: " + err.Error(), Err: err}
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &Error{Kind: KindScript, Message: "request log: " + err.Error(), Err: err}
	}
	return nil
}

func (s *Scripted) Stream(ctx context.Context, req Request, onDelta func(Delta)) (convo.Message, error) {
	b := newBuilder(s.name, req.Model, onDelta)
	if err := ctx.Err(); err != nil {
		return b.fail(ctx, err)
	}
	ti, err := s.pick(req)
	if err != nil {
		return b.fail(ctx, err)
	}
	turn := s.turns[ti]
	for k, st := range turn.Steps {
		if err := s.step(ctx, b, ti, k, st); err != nil {
			return b.fail(ctx, err)
		}
		if err := ctx.Err(); err != nil {
			return b.fail(ctx, err)
		}
	}
	if turn.Usage != nil {
		b.usage = convo.Usage(*turn.Usage)
	} else {
		b.usage = estimateUsage(req, b.outputChars())
	}
	stop := turn.StopReason
	if stop == "" {
		stop = convo.StopEnd
	}
	msg, _ := b.finish(stop)
	if turn.StopReason != "" {
		msg.StopReason = turn.StopReason
	}
	return msg, nil
}

func (s *Scripted) step(ctx context.Context, b *builder, turn, k int, st scriptStep) error {
	switch {
	case st.Text != nil:
		b.appendText(convo.BlockText, *st.Text)
	case st.Thinking != nil:
		if i := b.appendText(convo.BlockThinking, *st.Thinking); i >= 0 && st.Signature != "" {
			b.msg.Content[i].Signature = st.Signature
		}
	case st.ToolCall != nil:
		id := st.ToolCall.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", turn+1, k+1)
		}
		i := b.startToolCall(id, st.ToolCall.Name)
		b.addArgs(i, string(st.ToolCall.Arguments))
	case st.WaitFile != "":
		return waitForFile(ctx, s.path(st.WaitFile))
	case st.TouchFile != "":
		if err := os.WriteFile(s.path(st.TouchFile), nil, 0o644); err != nil {
			return &Error{Kind: KindScript, Message: "touchFile: " + err.Error(), Err: err}
		}
	case st.Hang:
		<-ctx.Done()
		return ctx.Err()
	case st.SleepMs > 0:
		return sleepCtx(ctx, time.Duration(st.SleepMs)*time.Millisecond)
	case st.Error != "":
		if st.Status != 0 {
			return &Error{Kind: KindHTTP, Status: st.Status, Message: st.Error, Retryable: st.Retryable}
		}
		return &Error{Kind: KindProvider, Message: st.Error, Retryable: st.Retryable}
	case st.Truncate:
		return truncatedError(nil)
	}
	return nil
}

// waitForFile polls: it must work across processes and file systems, where
// change notification is not portable.
func waitForFile(ctx context.Context, path string) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := os.Stat(path)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return &Error{Kind: KindScript, Message: "waitFile: " + err.Error(), Err: err}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// estimateUsage gives offline models plausible, deterministic token
// counts (about four characters a token) so that usage displays and
// context budgets have numbers to work with.
func estimateUsage(req Request, outChars int) convo.Usage {
	in := len(req.System)
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	for _, m := range req.Messages {
		in += contentChars(m.Content)
	}
	return convo.Usage{Input: (in + 3) / 4, Output: (outChars + 3) / 4}
}

func contentChars(blocks []convo.Block) int {
	n := 0
	for _, b := range blocks {
		n += len(b.Text) + len(b.Name) + len(b.Arguments) + len(b.Data)/100
	}
	return n
}
