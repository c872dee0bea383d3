package acp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
)

const toolScript = `{"turns":[
 {"match":"look","steps":[{"thinking":"I should list the files."},{"toolCall":{"id":"t1","name":"ls","arguments":{}}}]},
 {"match":"look","steps":[{"toolCall":{"id":"t2","name":"read","arguments":{"path":"hello.txt"}}}]},
 {"match":"look","steps":[{"text":"Found "},{"text":"hello.txt."}]},
 {"purpose":"title","steps":[{"text":"Looking at files"}]},
 {"match":"again","steps":[{"text":"Still here."}]}
]}`

// TestPromptToolsLoadListResume drives one session through a prompt with
// tool calls, then, in a new process over the same data root, lists it,
// loads it (the replay must fold to what the client saw live) and resumes
// it on a third connection.
func TestPromptToolsLoadListResume(t *testing.T) {
	h := newHarness(t, toolScript)
	c := h.connect()

	ini := c.initialize()
	if ini.ProtocolVersion != 1 || !ini.AgentCapabilities.LoadSession ||
		!ini.AgentCapabilities.PromptCapabilities.Image || !ini.AgentCapabilities.PromptCapabilities.EmbeddedContext ||
		ini.AgentCapabilities.SessionCapabilities.List == nil || ini.AgentCapabilities.SessionCapabilities.Resume == nil ||
		ini.AgentCapabilities.SessionCapabilities.Close == nil || ini.AgentInfo == nil || ini.AgentInfo.Name != "loop" {
		t.Fatalf("initialize: %s", dump(ini))
	}
	ns := c.newSession()
	if ns.Modes == nil || ns.Modes.CurrentModeId != "read-only" || len(ns.Modes.AvailableModes) != 4 {
		t.Fatalf("modes: %s", dump(ns.Modes))
	}
	opts := map[string]string{}
	for _, o := range ns.ConfigOptions {
		if o.Select != nil {
			opts[string(o.Select.Id)] = string(o.Select.CurrentValue)
		}
	}
	if opts["mode"] != "read-only" || opts["model"] != "fake/m1" || opts["effort"] != "default" {
		t.Fatalf("config options: %s", dump(ns.ConfigOptions))
	}
	sid := string(ns.SessionId)

	if stop := c.mustPrompt(ns.SessionId, "look around"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	live := c.frames.updates(sid)
	ks := kinds(live)
	for _, want := range []string{"agent_thought_chunk", "tool_call:pending", "tool_call_update:in_progress", "tool_call_update:completed", "agent_message_chunk", "usage_update"} {
		if !has(ks, want) {
			t.Fatalf("live updates lack %s: %v", want, ks)
		}
	}
	if has(ks, "user_message_chunk") {
		t.Fatalf("the client's own prompt was echoed: %v", ks)
	}
	lf := fold(live, true)
	if got := lf.Tools["t1"]; got["title"] != "List ." || got["kind"] != "read" || got["status"] != "completed" {
		t.Fatalf("ls card: %s", dump(got))
	}
	read := lf.Tools["t2"]
	locs, _ := read["locations"].([]any)
	if read["title"] != "Read hello.txt" || read["kind"] != "read" || len(locs) != 1 ||
		locs[0].(map[string]any)["path"] != filepath.Join(h.work, "hello.txt") || !strings.Contains(dump(read["content"]), "world") {
		t.Fatalf("read card: %s", dump(read))
	}
	if !strings.Contains(strings.Join(lf.Messages, "\n"), "Found hello.txt.") {
		t.Fatalf("messages: %v", lf.Messages)
	}

	// The background title arrives as a session_info_update.
	waitFor(t, "the title update", func() bool {
		for _, u := range c.frames.updates(sid) {
			if u["sessionUpdate"] == "session_info_update" && u["title"] == "Looking at files" {
				return true
			}
		}
		return false
	})
	// Every update the agent sent decodes in the Go SDK (which handles
	// notifications in order, after the tee saw them).
	waitFor(t, "the SDK to decode every update", func() bool { return c.rec.count() == len(c.frames.updates(sid)) })

	// A new process over the same store.
	h.restart()
	c2 := h.connect()
	c2.initialize()
	list, err := c2.cs.ListSessions(ctx(t), sdk.ListSessionsRequest{Cwd: &h.work})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 || string(list.Sessions[0].SessionId) != sid || list.Sessions[0].Cwd != h.work ||
		list.Sessions[0].Title == nil || *list.Sessions[0].Title != "Looking at files" || list.Sessions[0].UpdatedAt == nil {
		t.Fatalf("list: %s", dump(list))
	}
	if _, err := time.Parse(time.RFC3339, *list.Sessions[0].UpdatedAt); err != nil {
		t.Fatalf("updatedAt is not ISO 8601: %v", err)
	}

	if _, err := c2.cs.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: h.work, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	// The replay came before the reply: the SDK handled it already.
	replayed := c2.frames.updates(sid)
	if len(replayed) == 0 || c2.rec.count() != len(replayed) {
		t.Fatalf("replay: %d raw updates, %d decoded before the load returned", len(replayed), c2.rec.count())
	}
	user := fold(replayed, false)
	if !strings.Contains(user.Messages[0], "user_message_chunk") || !strings.HasSuffix(user.Messages[0], ": look around") {
		t.Fatalf("replay starts with %v", user.Messages)
	}
	rf := fold(replayed, true)
	if !reflect.DeepEqual(rf.Messages, lf.Messages) {
		t.Fatalf("replayed messages differ:\nlive   %v\nreplay %v", lf.Messages, rf.Messages)
	}
	if !reflect.DeepEqual(rf.Tools, lf.Tools) || !reflect.DeepEqual(rf.Order, lf.Order) {
		t.Fatalf("replayed tool cards differ:\nlive   %s\nreplay %s", dump(lf.Tools), dump(rf.Tools))
	}
	if k := kinds(replayed); !has(k, "session_info_update") || !has(k, "usage_update") {
		t.Fatalf("replay lacks the title or usage: %v", k)
	}

	// Resume on a third connection: no replay, and the session continues.
	c3 := h.connect()
	c3.initialize()
	res, err := c3.cs.ResumeSession(ctx(t), sdk.ResumeSessionRequest{SessionId: ns.SessionId, Cwd: h.work})
	if err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	if res.Modes == nil || res.Modes.CurrentModeId != "read-only" {
		t.Fatalf("resume: %s", dump(res))
	}
	if n := len(c3.frames.updates(sid)); n != 0 {
		t.Fatalf("resume sent %d updates", n)
	}
	if stop := c3.mustPrompt(ns.SessionId, "again"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason after resume %q", stop)
	}
	if f := fold(c3.frames.updates(sid), true); !strings.Contains(strings.Join(f.Messages, ""), "Still here.") {
		t.Fatalf("after resume: %v", f.Messages)
	}
}

const askScript = `{"turns":[
 {"match":"one","steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"A\n"}}}]},
 {"match":"one","steps":[{"text":"wrote a"}]},
 {"match":"two","steps":[{"toolCall":{"id":"w2","name":"write","arguments":{"path":"b.txt","content":"B\n"}}}]},
 {"match":"two","steps":[{"text":"wrote b"}]},
 {"match":"three","steps":[{"toolCall":{"id":"e1","name":"edit","arguments":{"path":"hello.txt","oldText":"world","newText":"there"}}}]},
 {"match":"three","steps":[{"text":"not edited"}]},
 {"match":"four","steps":[{"toolCall":{"id":"e2","name":"edit","arguments":{"path":"hello.txt","oldText":"world","newText":"there"}}}]},
 {"match":"four","steps":[{"text":"still not edited"}]}
]}`

// TestPermissionModes sets the "ask" mode and answers permission requests:
// allow_always sticks for the tool, reject_always too.
func TestPermissionModes(t *testing.T) {
	h := newHarness(t, askScript)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)

	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "ask"}); err != nil {
		t.Fatalf("set_mode: %v", err)
	}
	if k := kinds(c.frames.updates(sid)); !has(k, "current_mode_update") || !has(k, "config_option_update") {
		t.Fatalf("set_mode sent %v", k)
	}

	c.rec.answer = selectOption("allow_always")
	if stop := c.mustPrompt(ns.SessionId, "one"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("stopReason %q", stop)
	}
	if c.rec.permissionCount() != 1 {
		t.Fatalf("%d permission requests", c.rec.permissionCount())
	}
	p := c.rec.permissions[0]
	var optKinds []string
	for _, o := range p.Options {
		optKinds = append(optKinds, string(o.Kind))
	}
	if string(p.ToolCall.ToolCallId) != "w1" || p.ToolCall.Title == nil || *p.ToolCall.Title != "Write a.txt" ||
		strings.Join(optKinds, ",") != "allow_once,allow_always,reject_once,reject_always" {
		t.Fatalf("permission request: %s", dump(p))
	}
	if b, err := os.ReadFile(filepath.Join(h.work, "a.txt")); err != nil || string(b) != "A\n" {
		t.Fatalf("a.txt: %q %v", b, err)
	}
	card := fold(c.frames.updates(sid), true).Tools["w1"]
	diff := card["content"].([]any)[0].(map[string]any)
	if card["status"] != "completed" || card["kind"] != "edit" || diff["type"] != "diff" ||
		diff["path"] != filepath.Join(h.work, "a.txt") || diff["newText"] != "A\n" || diff["oldText"] != nil {
		t.Fatalf("write card: %s", dump(card))
	}

	// allow_always: the engine remembers it for the live session.
	c.mustPrompt(ns.SessionId, "two")
	if c.rec.permissionCount() != 1 {
		t.Fatalf("allow_always was not remembered: %d requests", c.rec.permissionCount())
	}
	if _, err := os.Stat(filepath.Join(h.work, "b.txt")); err != nil {
		t.Fatal(err)
	}

	// reject_always: the agent remembers it.
	c.rec.answer = selectOption("reject_always")
	c.mustPrompt(ns.SessionId, "three")
	c.mustPrompt(ns.SessionId, "four")
	if c.rec.permissionCount() != 2 {
		t.Fatalf("reject_always: %d requests", c.rec.permissionCount())
	}
	f := fold(c.frames.updates(sid), true)
	if f.Tools["e1"]["status"] != "failed" || f.Tools["e2"]["status"] != "failed" {
		t.Fatalf("rejected edits: %s", dump(f.Tools))
	}
	if b, _ := os.ReadFile(filepath.Join(h.work, "hello.txt")); string(b) != "hello\nworld\n" {
		t.Fatalf("hello.txt was edited: %q", b)
	}
}

// The "always" answers are the engine's standing decisions for the live
// session; session/close resets them, so a load asks again (docs/acp.md).
func TestCloseForgetsAlwaysAnswers(t *testing.T) {
	h := newHarness(t, askScript)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	if _, err := c.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: ns.SessionId, ModeId: "ask"}); err != nil {
		t.Fatalf("set_mode: %v", err)
	}
	c.rec.answer = selectOption("reject_always")
	c.mustPrompt(ns.SessionId, "three")
	sess, err := h.eng.Session(string(ns.SessionId))
	if err != nil {
		t.Fatal(err)
	}
	if d := sess.Snapshot().LastApproval; d == nil || d.Decision != engine.DecisionRejectedSession {
		t.Fatalf("reject_always is not the engine's rejected-session: %+v", d)
	}
	if _, err := c.cs.CloseSession(ctx(t), sdk.CloseSessionRequest{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: h.work, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	c.rec.answer = selectOption("allow_once")
	c.mustPrompt(ns.SessionId, "four")
	if n := c.rec.permissionCount(); n != 2 {
		t.Fatalf("%d permission requests, want 2: the rejection outlived session/close", n)
	}
	if b, _ := os.ReadFile(filepath.Join(h.work, "hello.txt")); string(b) != "hello\nthere\n" {
		t.Fatalf("hello.txt: %q", b)
	}
}

const cancelScript = `{"turns":[
 {"match":"slow","steps":[{"text":"working"},{"hang":true}]},
 {"match":"queued","steps":[{"text":"ran"}]}
]}`

// TestCancel cancels a hanging turn with a second prompt queued behind it:
// both answer "cancelled" at once, and the session takes prompts after.
func TestCancel(t *testing.T) {
	h := newHarness(t, cancelScript)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)

	type result struct {
		stop sdk.StopReason
		err  error
	}
	first, second := make(chan result, 1), make(chan result, 1)
	go func() { r, err := c.prompt(ns.SessionId, "slow"); first <- result{r.StopReason, err} }()
	waitFor(t, "the first chunk", func() bool {
		return strings.Contains(dump(fold(c.frames.updates(sid), true).Messages), "working")
	})
	go func() { r, err := c.prompt(ns.SessionId, "queued"); second <- result{r.StopReason, err} }()
	sess, err := h.eng.Session(sid)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second prompt to queue", func() bool { return len(sess.Snapshot().State.Queue) == 1 })

	start := time.Now()
	if err := c.cs.Cancel(ctx(t), sdk.CancelNotification{SessionId: ns.SessionId}); err != nil {
		t.Fatal(err)
	}
	for i, ch := range []chan result{first, second} {
		select {
		case r := <-ch:
			if r.err != nil || r.stop != sdk.StopReasonCancelled {
				t.Fatalf("prompt %d: %q %v", i+1, r.stop, r.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("prompt %d was not answered after session/cancel", i+1)
		}
	}
	t.Logf("both prompts answered %v after session/cancel", time.Since(start))
	if n := len(sess.Snapshot().State.Queue); n != 0 {
		t.Fatalf("the cancelled prompt is still queued (%d)", n)
	}
	if stop := c.mustPrompt(ns.SessionId, "queued"); stop != sdk.StopReasonEndTurn {
		t.Fatalf("after cancel: %q", stop)
	}
}

const queueScript = `{"turns":[
 {"match":"first","steps":[{"text":"one"},{"waitFile":"go"}]},
 {"match":"second","steps":[{"text":"two"}]}
]}`

// TestQueuedPrompt: a prompt sent while a turn runs joins the queue and is
// answered when its own run settles, after the first.
func TestQueuedPrompt(t *testing.T) {
	h := newHarness(t, queueScript)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)

	done := make(chan string, 2)
	go func() {
		r, err := c.prompt(ns.SessionId, "first")
		done <- "first " + string(r.StopReason) + errString(err)
	}()
	waitFor(t, "the first chunk", func() bool { return strings.Contains(dump(fold(c.frames.updates(sid), true).Messages), "one") })
	go func() {
		r, err := c.prompt(ns.SessionId, "second")
		done <- "second " + string(r.StopReason) + errString(err)
	}()
	sess, _ := h.eng.Session(sid)
	waitFor(t, "the second prompt to queue", func() bool { return len(sess.Snapshot().State.Queue) == 1 })
	select {
	case r := <-done:
		t.Fatalf("answered before the run finished: %s", r)
	default:
	}
	write(t, filepath.Join(h.root, "go"), "")
	var got []string
	for range 2 {
		select {
		case r := <-done:
			got = append(got, r)
		case <-time.After(10 * time.Second):
			t.Fatalf("prompts not answered: %v", got)
		}
	}
	// The two callers' goroutines may take their answers in either order;
	// the agent must have sent them in order: the first prompt (sent
	// first, so of the lower id) answered first.
	slices.Sort(got)
	if strings.Join(got, ",") != "first end_turn,second end_turn" {
		t.Fatalf("answers: %v", got)
	}
	var answered []float64
	for _, f := range c.frames.all() {
		if r, ok := f["result"].(map[string]any); ok && r["stopReason"] != nil {
			answered = append(answered, f["id"].(float64))
		}
	}
	if len(answered) != 2 || answered[0] > answered[1] {
		t.Fatalf("prompt answers sent for ids %v: the second prompt was answered first", answered)
	}
	msgs := fold(c.frames.updates(sid), true).Messages
	if len(msgs) != 2 || !strings.HasSuffix(msgs[0], "one") || !strings.HasSuffix(msgs[1], "two") {
		t.Fatalf("messages: %v", msgs)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return " " + err.Error()
}

const configScript = `{"turns":[]}`

// TestConfigOptions switches effort and model with session/set_config_option
// and the older session/set_model.
func TestConfigOptions(t *testing.T) {
	h := newHarness(t, configScript)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)

	set := func(id, value string) (sdk.SetSessionConfigOptionResponse, error) {
		return c.cs.SetSessionConfigOption(ctx(t), sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
			SessionId: ns.SessionId, ConfigId: sdk.SessionConfigId(id), Value: sdk.SessionConfigValueId(value),
		}})
	}
	current := func(opts []sdk.SessionConfigOption) map[string]string {
		out := map[string]string{}
		for _, o := range opts {
			out[string(o.Select.Id)] = string(o.Select.CurrentValue)
		}
		return out
	}
	res, err := set("effort", "high")
	if err != nil {
		t.Fatal(err)
	}
	if cur := current(res.ConfigOptions); cur["effort"] != "high" || cur["model"] != "fake/m1" {
		t.Fatalf("after effort: %v", cur)
	}
	res, err = set("model", "fake/m2")
	if err != nil {
		t.Fatal(err)
	}
	if cur := current(res.ConfigOptions); cur["model"] != "fake/m2" || cur["effort"] != "" {
		t.Fatalf("after model (m2 has no effort levels): %v", cur)
	}
	if _, err := c.cs.UnstableSetSessionModel(ctx(t), sdk.UnstableSetSessionModelRequest{SessionId: ns.SessionId, ModelId: "fake/m1"}); err != nil {
		t.Fatalf("set_model: %v", err)
	}
	snap, _ := h.eng.Session(sid)
	if m := snap.Snapshot().Model; m == nil || m.ID != "m1" {
		t.Fatalf("model after set_model: %+v", m)
	}
	var updates int
	for _, u := range c.frames.updates(sid) {
		if u["sessionUpdate"] == "config_option_update" {
			updates++
		}
	}
	if updates != 3 {
		t.Fatalf("%d config_option_update, want 3", updates)
	}
	_, err = set("model", "fake/nope")
	var re *sdk.RequestError
	if !asRequestError(err, &re) || re.Code != -32002 || dataCode(re.Data) != "model_not_found" {
		t.Fatalf("unknown model: %v", err)
	}
	_, err = set("color", "red")
	if !asRequestError(err, &re) || re.Code != -32602 || dataCode(re.Data) != "invalid_params" {
		t.Fatalf("unknown option: %v", err)
	}
}

func dataCode(data any) string {
	m, _ := data.(map[string]any)
	s, _ := m["code"].(string)
	return s
}

func asRequestError(err error, re **sdk.RequestError) bool {
	e, ok := err.(*sdk.RequestError)
	if ok {
		*re = e
	}
	return ok
}

// TestPromptContent: links become mentions, embedded text resources become
// attached files (inlined when the engine refuses them), and a replay shows
// the resource again.
func TestPromptContent(t *testing.T) {
	h := newHarness(t, `{"turns":[{"match":"summarize","steps":[{"text":"ok"}]},{"match":"also","steps":[{"text":"ok"}]}]}`)
	c := h.connect()
	c.initialize()
	ns := c.newSession()
	sid := string(ns.SessionId)
	notes := "# Notes\nbuy milk\n"
	prompt := []sdk.ContentBlock{
		sdk.TextBlock("summarize"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///x/notes.md", Text: notes, MimeType: ptr("text/markdown")}}),
		sdk.ResourceLinkBlock("main.go", "file:///x/main.go"),
	}
	if _, err := c.cs.Prompt(ctx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: prompt}); err != nil {
		t.Fatal(err)
	}
	sess, _ := h.eng.Session(sid)
	user := sess.Snapshot().State.Messages[0]
	// Loop's context blocks for the model lead the stored message.
	for len(user.Content) > 0 && user.Content[0].Attachment == convo.AttachmentContext {
		user.Content = user.Content[1:]
	}
	if got := user.Content[0].Text; got != "summarize [@notes.md](file:///x/notes.md) [@main.go](file:///x/main.go)" {
		t.Fatalf("prompt text: %q", got)
	}
	if len(user.Content) != 2 || user.Content[1].Attachment != "file" || !strings.Contains(user.Content[1].Text, "buy milk") {
		t.Fatalf("attachment: %s", dump(user.Content))
	}

	// A file type the engine does not attach goes into the text.
	prompt = []sdk.ContentBlock{
		sdk.TextBlock("also"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///x/data.xyz", Text: "payload"}}),
	}
	if _, err := c.cs.Prompt(ctx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: prompt}); err != nil {
		t.Fatal(err)
	}
	msgs := sess.Snapshot().State.Messages
	if last := msgs[len(msgs)-2]; len(last.Content) != 1 || !strings.Contains(last.Content[0].Text, "payload") {
		t.Fatalf("inlined resource: %s", dump(last.Content))
	}

	c2 := h.connect()
	c2.initialize()
	if _, err := c2.cs.LoadSession(ctx(t), sdk.LoadSessionRequest{SessionId: ns.SessionId, Cwd: h.work, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	var resource map[string]any
	for _, u := range c2.frames.updates(sid) {
		if c, _ := u["content"].(map[string]any); u["sessionUpdate"] == "user_message_chunk" && c["type"] == "resource" {
			resource, _ = c["resource"].(map[string]any)
		}
	}
	if resource["uri"] != "file:///x/notes.md" || resource["text"] != notes {
		t.Fatalf("replayed resource: %s", dump(resource))
	}

	// Audio is not advertised.
	_, err := c.cs.Prompt(ctx(t), sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{{Audio: &sdk.ContentBlockAudio{Data: "AAAA", MimeType: "audio/wav", Type: "audio"}}}})
	var re *sdk.RequestError
	if !asRequestError(err, &re) || re.Code != -32602 {
		t.Fatalf("audio: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

var _ = json.Marshal

// TestQueuedPromptsAnsweredAtTheEnd: prompts queued behind a turn that
// never finishes are answered "cancelled" when the session is deleted (by
// any client) or when the process shuts down.
func TestQueuedPromptsAnsweredAtTheEnd(t *testing.T) {
	h := newHarness(t, `{"turns":[
 {"match":"slow","steps":[{"text":"working"},{"hang":true}]},
 {"match":"slow","steps":[{"text":"working"},{"hang":true}]}]}`)
	c := h.connect()
	c.initialize()

	start := func() (sdk.NewSessionResponse, chan sdk.StopReason) {
		ns := c.newSession()
		sid := string(ns.SessionId)
		answers := make(chan sdk.StopReason, 2)
		for _, text := range []string{"slow", "queued"} {
			go func() {
				r, err := c.prompt(ns.SessionId, text)
				if err != nil {
					t.Errorf("%s: %v", text, err)
				}
				answers <- r.StopReason
			}()
			if text == "slow" {
				waitFor(t, "the first chunk", func() bool {
					return strings.Contains(dump(fold(c.frames.updates(sid), true).Messages), "working")
				})
			}
		}
		sess, _ := h.eng.Session(sid)
		waitFor(t, "the queued prompt", func() bool { return len(sess.Snapshot().State.Queue) == 1 })
		return ns, answers
	}
	expect := func(answers chan sdk.StopReason) {
		t.Helper()
		for i := range 2 {
			select {
			case r := <-answers:
				if r != sdk.StopReasonCancelled {
					t.Fatalf("answer %d: %q", i+1, r)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("answer %d missing", i+1)
			}
		}
	}

	ns, answers := start()
	sess, _ := h.eng.Session(string(ns.SessionId))
	if err := h.eng.Delete(ctx(t), sess.WorkspaceID(), string(ns.SessionId)); err != nil {
		t.Fatal(err)
	}
	expect(answers)

	_, answers = start()
	h.stop() // engine.Abort: the running turn settles, the queued one never runs
	c.agent.CancelPending()
	expect(answers)
	h.start()
}
