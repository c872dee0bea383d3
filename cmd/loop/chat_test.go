package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	uv "github.com/charmbracelet/ultraviolet"
	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"github.com/loopdev/loop/internal/sandbox"
)

// chatTerm is loop chat on a real pseudo-terminal: what a person sees,
// played by a terminal emulator (charmbracelet/x/vt), scrollback and
// screen, and what they type.
type chatTerm struct {
	t   *testing.T
	cmd *exec.Cmd
	pt  *os.File // the screen: the master side of the chat's terminal
	// keyboard is where keys are typed: pt, or the master side of a
	// terminal of its own on the chat's stdin (startChatOn).
	keyboard *os.File
	mu       sync.Mutex
	emu      *vt.Emulator
	seen     int // the row (scrollback and screen) where the last thing seen was
	done     chan error
}

// The size of the test's terminal.
const termCols, termRows = 100, 30

func startChat(t *testing.T, data, proj string, args ...string) *chatTerm {
	t.Helper()
	return startChatOn(t, data, proj, false, args...)
}

// startChatOn starts loop chat on a pseudo-terminal, its controlling
// terminal. With keyboard, stdin is a second one instead, which nothing
// reads but the chat: closing the test's end of it (closeKeyboard) ends
// the chat's input at once, and sends no signal.
func startChatOn(t *testing.T, data, proj string, keyboard bool, args ...string) *chatTerm {
	t.Helper()
	return startLoopOn(t, data, proj, keyboard, append([]string{"chat"}, args...)...)
}

// startLoopOn is startChatOn for any command line of loop (args).
func startLoopOn(t *testing.T, data, proj string, keyboard bool, args ...string) *chatTerm {
	t.Helper()
	bin, pt, tty := loopAndPty(t)
	if err := pty.Setsize(pt, &pty.Winsize{Rows: termRows, Cols: termCols}); err != nil {
		t.Fatal(err)
	}
	c := &chatTerm{t: t, pt: pt, keyboard: pt, cmd: loopCommand(bin, data, proj, args...), done: make(chan error, 1),
		emu: vt.NewEmulator(termCols, termRows)}
	c.cmd.Env = append(c.cmd.Env, "TERM=xterm")
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = tty, tty, tty
	if keyboard {
		kb, kbTTY, err := pty.Open()
		if err != nil {
			t.Fatal(err)
		}
		c.keyboard, c.cmd.Stdin = kb, kbTTY
		defer kbTTY.Close()
		t.Cleanup(func() { kb.Close() })
	}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go func() { c.done <- c.cmd.Wait() }()
	go c.play()
	// The emulator answers the chat's queries (a real terminal's replies)
	// on the keyboard.
	go func() { _, _ = io.Copy(c.keyboard, c.emu) }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.done
		pt.Close()
	})
	return c
}

// closeKeyboard closes the test's end of the chat's stdin: the chat reads
// the end of its input, as when its terminal goes away.
func (c *chatTerm) closeKeyboard() {
	c.t.Helper()
	if c.keyboard == c.pt {
		c.t.Fatal("closeKeyboard needs a chat started with a keyboard of its own")
	}
	if err := c.keyboard.Close(); err != nil {
		c.t.Fatal(err)
	}
}

// play feeds what the chat writes to the emulator until the terminal
// closes.
func (c *chatTerm) play() {
	buf := make([]byte, 4096)
	for {
		n, err := c.pt.Read(buf)
		c.mu.Lock()
		_, _ = c.emu.Write(buf[:n])
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// screen returns the rows as they look now: the scrollback, then the
// screen.
func (c *chatTerm) screen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rows []string
	for _, l := range c.emu.Scrollback().Lines() {
		rows = append(rows, strings.TrimRight(l.String(), " "))
	}
	for _, l := range strings.Split(c.emu.String(), "\n") {
		rows = append(rows, strings.TrimRight(l, " "))
	}
	return rows
}

// visible is the screen alone, as it looks now.
func (c *chatTerm) visible() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows := strings.Split(c.emu.String(), "\n")
	for i := range rows {
		rows[i] = strings.TrimRight(rows[i], " ")
	}
	return rows
}

// resize changes the terminal's size, as a person dragging its window.
func (c *chatTerm) resize(cols, rows int) {
	c.t.Helper()
	c.mu.Lock()
	c.emu.Resize(cols, rows)
	c.mu.Unlock()
	if err := pty.Setsize(c.pt, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}); err != nil {
		c.t.Fatal(err)
	}
}

// sessionID is the session the chat said it opened at the start.
func (c *chatTerm) sessionID() string {
	c.t.Helper()
	for _, r := range c.screen() {
		if _, rest, ok := strings.Cut(r, "loop chat: session "); ok {
			return strings.Fields(rest)[0]
		}
	}
	c.t.Fatal("the chat named no session")
	return ""
}

// idle waits until the session is idle: no spinner, and the prompt
// "> " with nothing typed after it. After a run, wait for its usage line
// first: a run so short that it starts and ends within one frame never
// shows its spinner.
func (c *chatTerm) idle() {
	c.t.Helper()
	c.waitScreen("an idle prompt", func(rows []string) bool {
		prompt := false
		for _, r := range rows {
			if strings.Contains(r, "working ") {
				return false
			}
			prompt = prompt || r == ">"
		}
		return prompt
	})
}

// waitScreen waits until the visible screen satisfies ok.
func (c *chatTerm) waitScreen(what string, ok func(rows []string) bool) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ok(c.visible()) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("the screen never showed %s:\n%s", what, strings.Join(c.visible(), "\n"))
}

// liveRows is how far above the row of what was last seen the next
// thing may show: what was seen may have been in the part of the screen
// the chat redraws below what it printed (an approval, the streaming
// answer's last block), and what is printed next goes above that part.
const liveRows = 12

// see waits until text shows on the screen, on the row of what the last
// call saw or below it (or up to liveRows above it).
func (c *chatTerm) see(text string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		rows := c.screen()
		for i := max(c.seen-liveRows, 0); i < len(rows); i++ {
			// A line longer than the terminal is wide goes on in the
			// rows below it: cut anywhere (the terminal wrapped it) or
			// at a space (the chat did).
			next := rows[i:min(i+8, len(rows))]
			if strings.Contains(strings.Join(next, ""), text) || strings.Contains(strings.Join(next, " "), text) {
				c.seen = i
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	rows := c.screen()
	c.t.Fatalf("the chat never showed %q at row %d or below:\n%s", text, c.seen, strings.Join(rows, "\n"))
}

func (c *chatTerm) keys(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.keyboard, s); err != nil {
		c.t.Fatal(err)
	}
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestChatOnAPseudoTerminal(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"hello","steps":[{"text":"Hi there, "},{"text":"streaming."}]},
		{"match":"write","steps":[{"toolCall":{"id":"w1","name":"write","arguments":{"path":"new.txt","content":"x"}}}]},
		{"match":"write","steps":[{"text":"Wrote it."}]},
		{"match":"slow","steps":[{"text":"Working"},{"touchFile":"reached1"},{"waitFile":"gate1"},{"text":" done."}]},
		{"match":"queued","steps":[{"text":"Queued answer."}]},
		{"match":"hang","steps":[{"text":"partial"},{"touchFile":"reached2"},{"hang":true}]},
		{"match":"save","steps":[{"touchFile":"reached3"},{"waitFile":"gate3"},{"text":"saved later"}]}
	]}`)
	c := startChat(t, data, proj, "--permission", "ask")
	c.see("loop chat: session ")
	c.idle()

	// A prompt; the answer streams.
	c.keys("hello\r")
	c.see("Hi there, streaming.")
	c.see(" tokens")
	c.idle()

	// A tool call that needs consent is asked inline.
	c.keys("write a file\r")
	c.see(`? write {"path":"new.txt","content":"x"} needs your approval`)
	c.see("allow? [y] once  [a] for this session  [n] no")
	c.keys("y")
	c.see(`? write {"path":"new.txt","content":"x"}: allowed once`)
	c.see("✓ ")
	c.see("Wrote it.")
	if b, err := os.ReadFile(filepath.Join(proj, "new.txt")); err != nil || string(b) != "x" {
		t.Fatalf("the approved write: %q %v", b, err)
	}

	// Typed during a run: queued, shown as queued, then run.
	c.keys("slow one\r")
	c.see("Working")
	waitForFile(t, filepath.Join(data, "reached1"))
	c.keys("queued one\r")
	c.see("(queued: queued one)")
	c.keys("/queue\r")
	c.see("1. queued one")
	touch(t, filepath.Join(data, "gate1"))
	c.see(" done.")
	c.see("> queued one")
	c.see("Queued answer.")

	// Ctrl-C stops a run and keeps the partial answer.
	c.keys("hang now\r")
	waitForFile(t, filepath.Join(data, "reached2"))
	c.see("partial")
	c.keys("\x03")
	c.see("(stopped; the partial answer is kept")

	// While a result is unsaved, exit is refused; /flush saves it.
	c.keys("save this\r")
	waitForFile(t, filepath.Join(data, "reached3"))
	dirs, _ := filepath.Glob(filepath.Join(data, "sessions", "*", "*"))
	if len(dirs) != 1 {
		t.Fatalf("sessions: %v", dirs)
	}
	blocker := filepath.Join(dirs[0], "header.json.tmp")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	touch(t, filepath.Join(data, "gate3"))
	c.see("not saved: ")
	c.keys("\x04")
	c.see("does not exit. Repair the problem, then type /flush.")
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	c.keys("/flush\r")
	c.see("saved")

	// Ctrl-D at an idle prompt exits.
	c.keys("\x04")
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, strings.Join(c.screen(), "\n"))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("loop chat did not exit:\n%s", strings.Join(c.screen(), "\n"))
	}
	msgs, err := os.ReadFile(filepath.Join(dirs[0], "messages.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Hi there, streaming.", "Queued answer.", `"text":"partial"`, "saved later"} {
		if !strings.Contains(string(msgs), want) {
			t.Errorf("history lacks %q", want)
		}
	}
}

func (c *chatTerm) exited() {
	c.t.Helper()
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			c.t.Fatalf("exit: %v\n%s", err, strings.Join(c.screen(), "\n"))
		}
	case <-time.After(30 * time.Second):
		c.t.Fatalf("loop chat did not exit:\n%s", strings.Join(c.screen(), "\n"))
	}
}

func TestChatSlashCommands(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"one","steps":[{"text":"first answer"}]},
		{"match":"two","steps":[{"text":"second answer"}]},
		{"match":"hang","steps":[{"text":"half"},{"touchFile":"reached1"},{"hang":true}]},
		{"match":"Continue","steps":[{"text":"resumed answer"}]},
		{"purpose":"summary","steps":[{"text":"A summary."}]},
		{"match":"hold","steps":[{"touchFile":"reached2"},{"waitFile":"gate2"},{"text":"held answer"}]},
		{"match":"keep","steps":[{"text":"kept item ran"}]}
	]}`)
	cfg := `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"},{"id":"m2","efforts":["low","high"]}]}}}`
	if err := os.WriteFile(filepath.Join(data, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChat(t, data, proj)
	c.see("loop chat: session ")
	first := c.sessionID()

	c.keys("/help\r")
	c.see("/queue [delete N | send N]")
	c.keys("/bogus\r")
	c.see("no command /bogus")

	c.keys("one\r")
	c.see("first answer")
	// The scripted model has no prices: tokens, and no cost.
	c.see("tokens: input ")
	c.idle()
	c.keys("/usage\r")
	c.see("usage: ")
	c.see(", cost unknown: the models have no prices in config.json (models[].cost)")
	c.keys("/title My chat\r")
	c.see("title: My chat")
	c.keys("/sessions\r")
	c.see("* " + first)
	c.see("My chat  2 messages")

	c.keys("/new\r")
	c.see("new session ")
	c.keys("two\r")
	c.see("second answer")
	c.see(" tokens")
	c.idle()
	c.keys("/sessions\r")
	c.see("My chat  2 messages")
	c.keys("/open " + first + "\r")
	c.see("opened " + first + " My chat: 2 messages, model fake/m1")

	c.keys("/model\r")
	c.see("fake/m2  efforts: low, high")
	c.keys("/model fake/m2 high\r")
	c.see("model: fake/m2 (high)")
	c.keys("/permission workspace-write\r")
	c.see("permission: workspace-write")
	// /permission says where bash runs: in which sandbox, and what it
	// allows, or that there is none and bash asks.
	if sandbox.Probe().Available {
		c.see("bash and MCP stdio servers run in the workspace-write sandbox: writes are allowed only in ")
	} else {
		c.see("; bash asks before each command")
	}
	c.keys("/permission\r")
	c.see("permission: workspace-write (others: read-only, workspace-write, ask, full-access)")
	c.keys("/permission full-access\r")
	c.see("bash and MCP stdio servers run without a sandbox (full-access)")
	c.keys("/permission read-only\r")
	if sandbox.Probe().Available {
		c.see("bash and MCP stdio servers run in the read-only sandbox: writes are allowed only in ")
	} else {
		c.see("; bash is denied (read-only runs it only in the sandbox")
	}
	c.keys("/permission workspace-write\r")

	// Stop, then resume the stopped run.
	c.keys("hang now\r")
	waitForFile(t, filepath.Join(data, "reached1"))
	c.see("half")
	c.keys("\x03")
	c.see("(stopped")
	c.keys("/resume\r")
	c.see("resumed answer")
	c.see(" tokens")
	c.idle()

	c.keys("/compact\r")
	c.see("compacted: the model now reads a summary")

	// Delete one of two queued inputs; the other runs.
	c.keys("hold on\r")
	waitForFile(t, filepath.Join(data, "reached2"))
	c.keys("drop this\r")
	c.see("(queued: drop this)")
	c.keys("keep this\r")
	c.see("(queued: keep this)")
	c.keys("/queue delete 1\r")
	c.see("deleted 1")
	c.keys("/queue\r")
	c.see("1. keep this")
	touch(t, filepath.Join(data, "gate2"))
	c.see("held answer")
	c.see("> keep this")
	c.see("kept item ran")
	c.see(" tokens")
	c.idle()

	// At an idle prompt: Ctrl-C clears the line, a second one exits.
	c.keys("typed but not sent")
	c.keys("\x03")
	c.see("(Ctrl-C again or Ctrl-D exits)")
	c.keys("\x03")
	c.exited()
	if rows := c.screen(); strings.Contains(strings.Join(rows, "\n"), "typed but not sent\n") {
		t.Fatalf("Ctrl-C sent the line:\n%s", strings.Join(rows, "\n"))
	}
}

// styleAt reports whether the first cell of the last place text shows
// (scrollback or screen) has a colour, and whether it is bold.
func (c *chatTerm) styleAt(text string) (coloured, bold bool) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var lines []uv.Line
	lines = append(lines, c.emu.Scrollback().Lines()...)
	for y := 0; y < c.emu.Height(); y++ {
		var l uv.Line
		for x := 0; x < c.emu.Width(); x++ {
			if cell := c.emu.CellAt(x, y); cell != nil {
				l = append(l, *cell)
			} else {
				l = append(l, uv.Cell{Content: " "})
			}
		}
		lines = append(lines, l)
	}
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		for x := range l {
			var s strings.Builder
			for _, cell := range l[x:] {
				s.WriteString(cell.Content)
				if s.Len() >= len(text) {
					break
				}
			}
			if strings.HasPrefix(s.String(), text) {
				st := l[x].Style
				return st.Fg != nil, st.Attrs&uv.AttrBold != 0
			}
		}
	}
	c.t.Fatalf("%q is not on the screen", text)
	return false, false
}
