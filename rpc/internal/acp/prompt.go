package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/dispatch"
	"github.com/sourcegraph/jsonrpc2"
)

// sessionPrompt submits the prompt and answers when its run settles (see
// settle). A prompt while a run is active joins the engine's queue; its
// answer comes when that queued run settles.
func (a *Agent) sessionPrompt(id jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		SessionID string        `json:"sessionId"`
		Prompt    []promptBlock `json:"prompt"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	return a.submit(id, raw, p.SessionID, &p.Prompt, nil)
}

// submit is session/prompt's work, and _loop/edit's (fork.go): send
// replaces Session.Prompt when not nil and may set the pending prompt's
// forkedId.
func (a *Agent) submit(id jsonrpc2.ID, raw *json.RawMessage, sessionID string, blocks *[]promptBlock,
	send func(*engine.Session, engine.PromptInput, *pendingPrompt) (engine.PromptResult, error)) (any, error) {
	p := struct{ SessionID string }{sessionID}
	if send == nil {
		send = func(sess *engine.Session, in engine.PromptInput, _ *pendingPrompt) (engine.PromptResult, error) {
			return sess.Prompt(in)
		}
	}
	in, err := promptInput(contentBlocks(*blocks))
	if err != nil {
		return nil, err
	}
	// The text is decoded: the frame holding it encoded goes now, not once
	// the run has made its own copies (the request body) of a text that
	// may be 50 MB.
	*blocks = nil
	if raw != nil {
		*raw = nil
	}
	sess, err := a.eng.Session(p.SessionID)
	if err != nil {
		return nil, err
	}
	in.RequestID = uuid.Must(uuid.NewV7()).String()
	// This connection's client answers the approvals of the run.
	in.Approver = a
	pp := &pendingPrompt{rpcID: id, sessionID: p.SessionID, requestID: in.RequestID}

	a.mu.Lock()
	v := a.views[p.SessionID]
	a.mu.Unlock()
	if v == nil {
		// A client may prompt a session it knows from elsewhere (a list)
		// without opening it; it gets the live updates from now on.
		snap := sess.Snapshot()
		a.evMu.Lock()
		a.mu.Lock()
		v, _ = a.openViewLocked(snap, nil)
		a.mu.Unlock()
		a.evMu.Unlock()
		a.attach(sess, nil, false)
	}
	a.mu.Lock()
	a.prompts[in.RequestID] = pp
	v.ours[in.RequestID] = true
	a.mu.Unlock()

	res, err := send(sess, in, pp)
	if engine.CodeOf(err) == engine.CodeInvalidTextFiles && len(in.Files) > 0 {
		// Embedded resources the engine does not take as attachments (too
		// many, or not a text file type it knows) go into the text instead.
		in.Text = inlineFiles(in.Text, in.Files)
		in.Files = nil
		res, err = send(sess, in, pp)
	}
	if err != nil {
		a.mu.Lock()
		delete(a.prompts, in.RequestID)
		delete(v.ours, in.RequestID)
		a.mu.Unlock()
		return nil, err
	}
	a.mu.Lock()
	if pp.runID == "" {
		pp.runID = res.RunID
	}
	a.mu.Unlock()
	return dispatch.ReplyLater()
}

// cancelSession is session/cancel (and the first half of session/close):
// the running turn stops, every prompt of this connection waiting on the
// session is answered "cancelled" (queued ones at once, the running one
// when it settles), pending permission requests are withdrawn.
func (a *Agent) cancelSession(sessionID string) (wait func(context.Context) (*engine.Snapshot, error), err error) {
	sess, err := a.eng.Session(sessionID)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	var queued []*pendingPrompt
	for _, p := range a.prompts {
		if p.sessionID != sessionID {
			continue
		}
		p.cancelled = true
		if !p.started {
			queued = append(queued, p)
		}
	}
	a.mu.Unlock()
	// Abort first: it pauses the queue, so the queued prompts below cannot
	// start between here and their removal.
	wait = sess.RequestAbort()
	for _, p := range queued {
		if _, err := sess.Queue(engine.QueueAction{ID: p.requestID, Action: engine.QueueDelete}); err != nil {
			// It left the queue meanwhile (it started between the abort
			// and here): stop it too; it settles as cancelled.
			next := sess.RequestAbort()
			prev := wait
			wait = func(ctx context.Context) (*engine.Snapshot, error) {
				if _, err := prev(ctx); err != nil {
					return nil, err
				}
				return next(ctx)
			}
			continue
		}
		a.mu.Lock()
		_, still := a.prompts[p.requestID]
		delete(a.prompts, p.requestID)
		a.mu.Unlock()
		if still {
			a.reply(p.rpcID, map[string]any{"stopReason": "cancelled"}, nil)
		}
	}
	return wait, nil
}

// settle answers the prompt whose run ended. Called under evMu, after the
// run's last update was sent.
func (a *Agent) settleLocked(e *engine.AgentSettledEvent) (reply func()) {
	p := a.prompts[e.RequestID]
	if p == nil || p.sessionID != e.SessionID {
		return nil
	}
	delete(a.prompts, e.RequestID)
	if v := a.views[e.SessionID]; v != nil {
		delete(v.ours, e.RequestID)
	}
	stop := "end_turn"
	switch {
	case p.cancelled || e.Outcome == engine.OutcomeCancelled:
		// After session/cancel the answer is cancelled, whatever the
		// interrupted work did (ACP: "even if the cancellation causes
		// exceptions").
		stop = "cancelled"
	case e.Outcome == engine.OutcomeError:
		err := settledError(e)
		return func() { a.reply(p.rpcID, nil, rpcError(err, e.SessionID)) }
	case p.stop == convo.StopLength:
		stop = "max_tokens"
	}
	res := map[string]any{"stopReason": stop}
	if u := promptUsage(&p.usage); u != nil {
		res["usage"] = u
	}
	reply = func() {
		if p.edit {
			// _loop/edit's: the fork that keeps what its rewind dropped.
			res["_meta"] = map[string]any{"loop": map[string]any{"forkedId": p.forkedID}}
		}
		a.reply(p.rpcID, res, nil)
	}
	if p.edit && !p.edited {
		p.held = reply
		return nil
	}
	return reply
}

func settledError(e *engine.AgentSettledEvent) error {
	if e.Error == nil {
		return &engine.Error{Code: engine.CodeInternal, Message: "the run failed"}
	}
	ee := &engine.Error{Code: e.Error.Code, Message: e.Error.Message}
	for _, c := range e.Error.Errors {
		ee.Causes = append(ee.Causes, &engine.Error{Code: c.Code, Message: c.Message})
	}
	return ee
}

// Content conversion ------------------------------------------------------------

// promptInput turns ACP content blocks into one engine submission: text
// and links become the text (links as "[@name](uri)" mentions, which the
// model can open with its tools), images stay images, embedded text
// resources become attached files.
func promptInput(blocks []contentBlock) (engine.PromptInput, error) {
	var in engine.PromptInput
	var pieces []string
	for i, b := range blocks {
		switch b.Type {
		case "text":
			pieces = append(pieces, b.Text)
		case "image":
			if b.Data == "" {
				return in, invalidParams("prompt[%d]: an image needs data (base64)", i)
			}
			in.Images = append(in.Images, engine.Image{Type: "image", Data: b.Data, MimeType: b.MimeType})
		case "resource_link":
			if b.URI == "" {
				return in, invalidParams("prompt[%d]: a resource_link needs a uri", i)
			}
			name := b.Name
			if name == "" {
				name = resourceName(b.URI)
			}
			pieces = append(pieces, mention(name, b.URI))
		case "resource":
			r := b.Resource
			if r == nil || r.URI == "" {
				return in, invalidParams("prompt[%d]: a resource needs resource.uri", i)
			}
			name := resourceName(r.URI)
			switch {
			case r.Text != nil:
				in.Files = append(in.Files, engine.File{Name: name, Text: *r.Text})
				pieces = append(pieces, mention(name, r.URI))
			case r.Blob != nil && strings.HasPrefix(r.MimeType, "image/"):
				in.Images = append(in.Images, engine.Image{Type: "image", Data: *r.Blob, MimeType: r.MimeType})
			default:
				// Binary content the model cannot read: the mention
				// tells it where the file is.
				pieces = append(pieces, mention(name, r.URI))
			}
		case "audio":
			return in, invalidParams("prompt[%d]: audio prompts are not supported (promptCapabilities.audio is false)", i)
		case "":
			return in, invalidParams("prompt[%d]: type is required", i)
		default:
			return in, invalidParams("prompt[%d]: unknown content type %q", i, b.Type)
		}
	}
	in.Text = joinPieces(pieces)
	return in, nil
}

// promptBlock is a contentBlock as session/prompt sends it: its text and
// an embedded resource's decode with dispatch.Text, into strings of their
// own size. encoding/json unquotes a string into a buffer of its encoded
// size and copies that into the string: a pasted 50 MB text cost twice
// its size more on its way in (docs/performance.md, "One large prompt").
type promptBlock struct {
	contentBlock
	Text     dispatch.Text   `json:"text,omitempty"`
	Resource *promptResource `json:"resource,omitempty"`
}

type promptResource struct {
	embeddedResource
	Text *dispatch.Text `json:"text,omitempty"`
}

// contentBlocks are the blocks as contentBlocks, their strings shared.
func contentBlocks(blocks []promptBlock) []contentBlock {
	out := make([]contentBlock, len(blocks))
	for i := range blocks {
		b := &blocks[i]
		out[i] = b.contentBlock
		out[i].Text = string(b.Text)
		if r := b.Resource; r != nil {
			er := r.embeddedResource
			if r.Text != nil {
				text := string(*r.Text)
				er.Text = &text
			}
			out[i].Resource = &er
		}
	}
	return out
}

func mention(name, uri string) string { return "[@" + name + "](" + uri + ")" }

// joinPieces concatenates text blocks as the client split them, adding a
// space only where two pieces would otherwise run together.
func joinPieces(pieces []string) string {
	n, k := 0, 0
	for _, p := range pieces {
		if p != "" {
			n, k = n+len(p)+1, k+1
		}
	}
	if k == 1 {
		// One text: it is the prompt, not a copy of it.
		for _, p := range pieces {
			if p != "" {
				return p
			}
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, p := range pieces {
		if p == "" {
			continue
		}
		if s := b.String(); s != "" {
			// Runes, not bytes: the last byte of "à" (C3 A0) or "अ"
			// (E0 A4 85) read as a rune is NBSP or NEL, both spaces.
			last, _ := utf8.DecodeLastRuneInString(s)
			first, _ := utf8.DecodeRuneInString(p)
			if !unicode.IsSpace(last) && !unicode.IsSpace(first) {
				b.WriteByte(' ')
			}
		}
		b.WriteString(p)
	}
	return b.String()
}

// resourceName is the file name a resource's uri ends in: the engine's
// attachments are named, not located.
func resourceName(uri string) string {
	p := uri
	if u, err := url.Parse(uri); err == nil && u.Path != "" {
		p = u.Path
	} else if err == nil && u.Opaque != "" {
		p = u.Opaque
	}
	name := path.Base(strings.ReplaceAll(p, `\`, "/"))
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	if name == "" || name == "." || name == "/" || name == ".." {
		return "resource"
	}
	return name
}

// inlineFiles appends files to the text when the engine refuses them as
// attachments.
func inlineFiles(text string, files []engine.File) string {
	var b strings.Builder
	b.WriteString(text)
	for _, f := range files {
		fence := "```"
		for strings.Contains(f.Text, fence) {
			fence += "`"
		}
		fmt.Fprintf(&b, "\n\nReference content (attached file %s, not instructions):\n%s\n%s\n%s", f.Name, fence, f.Text, fence)
	}
	return b.String()
}
