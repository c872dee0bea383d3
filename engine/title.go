package engine

import (
	"context"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/trace"
	"github.com/loopdev/loop/store"
)

const titleSystem = `You name conversations. Reply with a title of at most six words for the conversation that starts with the user's message below. Reply with the title only: no quotes, no punctuation at the end.`

// titleRequestPrefix starts the title request's user text (scripted
// models match on it).
const titleRequestPrefix = "Write a title for the conversation that starts with this message:\n\n"

// titlesEnabled: background titles are on unless the host or config
// turns them off.
func (e *Engine) titlesEnabled() bool {
	if e.opts.NoBackgroundTitles {
		return false
	}
	c := e.catalog().config
	return c.Titles.Enabled == nil || *c.Titles.Enabled
}

// TitleConfig turns automatic titles on or off (config.json "titles").
type TitleConfig struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// generateTitle asks the session's model for a title of text. Failures
// land in titleError, never in a run. A manual title wins over a
// background one; an explicit regeneration replaces it.
func (s *Session) generateTitle(ctx context.Context, text string, explicit bool) error {
	s.mu.Lock()
	m, prov, err := s.resolveModelLocked()
	s.mu.Unlock()
	if err == nil && !explicit && !s.e.providerTitles(m.Provider) {
		return nil
	}
	if err == nil {
		var msg convo.Message
		req := provider.Request{
			Model:           m.ID,
			System:          titleSystem,
			Messages:        []convo.Message{{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: titleRequestPrefix + text}}}},
			MaxOutputTokens: 1024,
			Effort:          titleEffort(m),
			Purpose:         provider.PurposeTitle,
		}
		if err = s.checkBudget(&m, s.simpleNeed(&req), false); err == nil {
			msg, err = s.stream(ctx, m, prov, req, func(provider.Delta) {})
		}
		if err == nil {
			title := NormalizeTitle(strings.Trim(strings.TrimSpace(msg.Text()), `"'.`))
			if title == "" {
				err = errorf(CodeModelError, "the model returned an empty title")
			} else {
				return s.acceptTitle(title, explicit)
			}
		}
	}
	s.saveUsage()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	why := err.Error()
	s.mu.Lock()
	s.titleError = &why
	s.mu.Unlock()
	s.publishState()
	if CodeOf(err) == CodeBudgetExceeded {
		return err
	}
	return wrapError(CodeModelError, err, "title")
}

func (s *Session) acceptTitle(title string, explicit bool) error {
	skip := false
	err := s.saveMeta(func(h *store.Header) {
		if h.TitleSource == "manual" && !explicit {
			skip = true
			return
		}
		h.Title, h.TitleSource = title, "auto"
	})
	if err != nil {
		why := err.Error()
		s.mu.Lock()
		s.titleError = &why
		s.mu.Unlock()
		s.publishState()
		return err
	}
	if skip {
		return nil
	}
	s.mu.Lock()
	s.titleError = nil
	s.mu.Unlock()
	s.publishState()
	s.publishListChange("title")
	return nil
}

// GenerateTitle regenerates the title from the saved user text; it shares
// the idle command lock.
func (s *Session) GenerateTitle(ctx context.Context) (*Snapshot, error) {
	finish, err := s.BeginGenerateTitle()
	if err != nil {
		return nil, err
	}
	return finish(ctx)
}

// BeginGenerateTitle takes the command lock now (see BeginCompact); finish
// asks the model.
func (s *Session) BeginGenerateTitle() (finish func(context.Context) (*Snapshot, error), err error) {
	c, err := s.beginCommand(OpTitle, kindCommand)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	text := s.firstTitleSourceLocked()
	cctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	s.mu.Unlock()
	// release also cancels; done may run twice (settleCommand).
	done := func() {
		cancel()
		c.release()
	}
	if text == "" {
		done()
		return nil, errorf(CodeInvalidParams, "the session has no saved user text to name it from")
	}
	s.traceStep(trace.TypeTitle)
	done = s.endingStep(trace.TypeTitle, done)
	return func(ctx context.Context) (_ *Snapshot, err error) {
		defer s.settleCommand(done, &err)
		defer done()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		s.cancelTitleWork()
		if err := s.generateTitle(cctx, text, true); err != nil {
			return nil, err
		}
		return s.Snapshot(), nil
	}, nil
}

// providerTitles: scripted providers generate background titles only when
// their config asks, so scripts stay deterministic.
func (e *Engine) providerTitles(name string) bool {
	for _, p := range e.catalog().config.Providers {
		if p.Name == name {
			if p.Titles != nil {
				return *p.Titles
			}
			api, _ := provider.Lookup(p.API)
			return api.Titles
		}
	}
	return false // the demo model
}

// titleEffort keeps reasoning models from spending a title's tokens on
// thinking, without sending a knob to models that do not take one.
func titleEffort(m Model) string {
	for _, e := range []string{"minimal", "low", "off"} {
		if m.supportsEffort(e) {
			return e
		}
	}
	return EffortDefault
}

// titleSource is what a title is made from: the user's text, else the
// names of the attached files.
// firstTitleSourceLocked is what the history's first user message gives
// a title to be made from; "" without one. Call it holding s.mu.
func (s *Session) firstTitleSourceLocked() string {
	for i := range s.history {
		if s.history[i].Role == convo.RoleUser {
			return titleSource(&s.history[i])
		}
	}
	return ""
}

func titleSource(m *convo.Message) string {
	if t := m.Text(); strings.TrimSpace(t) != "" {
		return t
	}
	var names []string
	for _, b := range m.Content {
		if b.Attachment == "file" {
			var f struct {
				Name string `json:"name"`
			}
			_, obj, _ := strings.Cut(b.Text, "\n")
			if json.Unmarshal([]byte(obj), &f) == nil && f.Name != "" {
				names = append(names, f.Name)
			}
		}
		if b.Type == convo.BlockImage {
			names = append(names, "an image")
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "Attached: " + strings.Join(names, ", ")
}

// maxFallbackTitle is the most characters of a fallback title, "…"
// included.
const maxFallbackTitle = 60

// fallbackTitle is a title made without the model from what a title is
// made from (titleSource of the first user message): its first line that
// is not blank, control characters and runs of white space made one
// space, cut at the last word boundary that keeps it within
// maxFallbackTitle characters and ended with "…" when cut (a first word
// longer than that is cut inside). A session gets it with its first run,
// so that it is never untitled in lists when no title is generated (titles
// off, loop run) or the process ends before one arrives; a generated
// title replaces it, and it never replaces one (docs/protocol.md
// "titleSource").
func fallbackTitle(text string) string {
	var line string
	for l := range strings.SplitSeq(text, "\n") {
		if strings.TrimSpace(l) != "" {
			line = l
			break
		}
	}
	words := strings.FieldsFunc(line, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
	t := strings.Join(words, " ")
	if utf8.RuneCountInString(t) <= maxFallbackTitle {
		return t
	}
	var b strings.Builder
	n := 0
	for _, w := range words {
		wn := utf8.RuneCountInString(w)
		if n > 0 {
			wn++
		}
		if n+wn > maxFallbackTitle-1 {
			break
		}
		if n > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		n += wn
	}
	if n == 0 {
		return string([]rune(t)[:maxFallbackTitle-1]) + "…"
	}
	return strings.TrimRight(b.String(), ",;:-–—") + "…"
}
