package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The terminal UI of loop chat as a person sees it: each test plays the
// chat's output on a terminal emulator (chatTerm) and asserts the screen.

// rowWith is the index of the last visible row containing text, or -1.
func rowWith(rows []string, text string) int {
	for i := len(rows) - 1; i >= 0; i-- {
		if strings.Contains(rows[i], text) {
			return i
		}
	}
	return -1
}

func TestChatInputStaysBelowTheStreamingAnswerWhileTyping(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"stream","steps":[{"text":"The first paragraph of the answer.\n\nThe second paragraph "},{"touchFile":"reached"},{"waitFile":"gate"},{"text":"ends here."}]}
	]}`)
	c := startChat(t, data, proj)
	c.idle()
	c.keys("stream please\r")
	waitForFile(t, filepath.Join(data, "reached"))
	c.see("The second paragraph")
	// Typed while the answer streams: it stays in the input, below.
	c.keys("typed meanwhile")
	c.waitScreen("the typed text in the input under the answer", func(rows []string) bool {
		in, ans := rowWith(rows, "… typed meanwhile"), rowWith(rows, "The second paragraph")
		return in > ans && ans >= 0
	})
	touch(t, filepath.Join(data, "gate"))
	c.see("The second paragraph ends here.")
	c.see(" tokens")
	// What was typed is still there to send, now at an idle prompt, and
	// nowhere else.
	c.waitScreen("the typed text at the idle prompt", func(rows []string) bool { return rowWith(rows, "> typed meanwhile") >= 0 })
	rows := c.screen()
	if n := strings.Count(strings.Join(rows, "\n"), "typed meanwhile"); n != 1 {
		t.Fatalf("the typed text shows %d times:\n%s", n, strings.Join(rows, "\n"))
	}
}

func TestChatRewrapsTheInputWhenTheTerminalIsResizedDuringAnAnswer(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"steps":[{"text":"Streaming part one, "},{"touchFile":"reached"},{"waitFile":"gate"},{"text":"part two."}]}]}`)
	c := startChat(t, data, proj)
	c.idle()
	c.keys("go\r")
	waitForFile(t, filepath.Join(data, "reached"))
	long := strings.Repeat("word ", 30) // 150 columns
	c.keys(long + "END")
	c.waitScreen("the input on two rows under the answer", func(rows []string) bool {
		ans, first := rowWith(rows, "Streaming part one,"), rowWith(rows, "… word word")
		return ans >= 0 && first > ans && rowWith(rows, "END") == first+1
	})
	c.resize(60, termRows)
	c.waitScreen("the input on three rows of 60 columns, under the answer", func(rows []string) bool {
		ans, first := rowWith(rows, "Streaming part one,"), rowWith(rows, "… word word")
		if ans < 0 || first <= ans || rowWith(rows, "END") != first+2 {
			return false
		}
		for _, r := range rows {
			if len([]rune(r)) > 60 {
				return false
			}
		}
		return true
	})
	touch(t, filepath.Join(data, "gate"))
	c.see("Streaming part one, part two.")
	c.see(" tokens")
	c.waitScreen("the input kept, at the idle prompt", func(rows []string) bool {
		first := rowWith(rows, "> word word")
		return first >= 0 && rowWith(rows, "END") == first+2
	})
}

func TestChatLongAnswerGoesToTheScrollbackWhole(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&b, "**Line %d** of the long answer.\n\n", i)
	}
	text, _ := json.Marshal(b.String())
	data, proj := newDataRoot(t, `{"turns":[{"steps":[{"text":`+string(text)+`}]}]}`)
	c := startChat(t, data, proj)
	c.idle()
	c.keys("long\r")
	c.see("Line 400 of the long answer.")
	c.see(" tokens")
	rows := c.screen()
	next := 1
	for _, r := range rows {
		if strings.HasPrefix(r, "Line ") {
			if want := fmt.Sprintf("Line %d of the long answer.", next); r != want {
				t.Fatalf("row %q, want %q", r, want)
			}
			next++
		}
	}
	if next != 401 {
		t.Fatalf("the scrollback and screen have %d of the 400 lines", next-1)
	}
}

func TestChatMeasuresWideCharactersCombiningMarksAndEmoji(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"steps":[{"text":"答え: 日本語 👍🏽 café"}]}]}`)
	c := startChat(t, data, proj)
	c.idle()
	// Backspace deletes a whole cluster: the skin-toned thumb (two code
	// points), the family (five), e with a combining acute (two).
	c.keys("ab👍🏽")
	c.waitScreen("the emoji typed", func(rows []string) bool { return rowWith(rows, "> ab👍🏽") >= 0 })
	c.keys("\x7f")
	c.waitScreen("the emoji deleted whole", func(rows []string) bool { r := rowWith(rows, "> ab"); return r >= 0 && rows[r] == "> ab" })
	c.keys("👩‍👩‍👧e\u0301\x7f\x7f")
	c.waitScreen("the family and the accented e deleted whole", func(rows []string) bool { r := rowWith(rows, "> ab"); return r >= 0 && rows[r] == "> ab" })
	// Wide characters: the cursor is after them, so typing goes on there.
	c.keys("日本x")
	c.waitScreen("wide characters then x", func(rows []string) bool { return rowWith(rows, "> ab日本x") >= 0 })
	c.keys("\x15question\r") // Ctrl-U, then a prompt
	c.see("答え: 日本語 👍🏽 café")
}

func TestChatApprovalShowsTheDiffAndTakesOneKey(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"steps":[{"toolCall":{"id":"e1","name":"edit","arguments":{"path":"notes.txt","oldText":"old line","newText":"new line"}}}]},
		{"steps":[{"toolCall":{"id":"e2","name":"write","arguments":{"path":"other.txt","content":"never"}}}]},
		{"steps":[{"text":"Edited."}]}]}`)
	if err := os.WriteFile(filepath.Join(proj, "notes.txt"), []byte("first\nold line\nlast\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChat(t, data, proj, "--permission", "ask")
	c.idle()
	c.keys("edit it\r")
	c.see("needs your approval")
	c.waitScreen("the diff of the edit", func(rows []string) bool {
		return rowWith(rows, "-old line") >= 0 && rowWith(rows, "+new line") >= 0 && rowWith(rows, "allow? [y] once") >= 0
	})
	c.keys("y") // one key, no Enter
	c.see("allowed once")
	c.waitScreen("the write's diff", func(rows []string) bool { return rowWith(rows, "+never") >= 0 })
	c.keys("n")
	c.see("rejected")
	c.see("Edited.")
	if b, _ := os.ReadFile(filepath.Join(proj, "notes.txt")); string(b) != "first\nnew line\nlast\n" {
		t.Fatalf("notes.txt: %q", b)
	}
	if _, err := os.Stat(filepath.Join(proj, "other.txt")); err == nil {
		t.Fatal("the rejected write ran")
	}
}

// mustLoopRun runs `loop run` with the test's data root, for sessions to pick.
func mustLoopRun(t *testing.T, data, proj string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("loop")
	if err != nil {
		t.Fatal(err)
	}
	cmd := loopCommand(bin, data, proj, append([]string{"run"}, args...)...)
	cmd.Env = append(cmd.Env, ttyEnv+"=none")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("loop run %v: %v\n%s", args, err, out)
	}
}

func TestChatResumePickerSearchesAndShowsTheConversation(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[
		{"match":"alpha","steps":[{"text":"The **alpha** answer."}]},
		{"match":"beta","steps":[{"text":"The beta answer."}]},
		{"match":"more","steps":[{"text":"More of beta."}]}]}`)
	mustLoopRun(t, data, proj, "alpha question")
	mustLoopRun(t, data, proj, "beta question with zebra")
	c := startChat(t, data, proj, "-r")
	c.see("Resume a conversation")
	// Untitled sessions show their first message.
	c.waitScreen("both sessions", func(rows []string) bool {
		return rowWith(rows, "alpha question  just now · 2 messages") >= 0 && rowWith(rows, "beta question with zebra  just now · 2 messages") >= 0
	})
	// Typing searches what was said.
	c.keys("zebra")
	c.waitScreen("only the session that said zebra", func(rows []string) bool {
		return strings.Count(strings.Join(rows, "\n"), "2 messages") == 1 && rowWith(rows, "zebra") >= 0
	})
	c.keys("\r")
	// Opened: the conversation so far.
	c.see("opened ")
	c.see("> beta question with zebra")
	c.see("The beta answer.")
	c.idle()
	c.keys("more\r")
	c.see("More of beta.")
	c.see(" tokens")
	c.idle()
	c.keys("\x04")
	c.exited()

	// -c continues the most recent session and shows it too.
	c = startChat(t, data, proj, "-c")
	c.see("> beta question with zebra")
	c.see("The beta answer.")
	c.see("> more")
	c.see("More of beta.")
	c.idle()

	// /resume with nothing stopped opens the picker; Esc leaves it.
	c.keys("/resume\r")
	c.see("Resume a conversation")
	c.keys("\x1b")
	c.idle()
}

func TestChatTabCompletesSlashCommandsAndTakesMultiLineInput(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"match":"second line","steps":[{"text":"Got both lines."}]}]}`)
	c := startChat(t, data, proj)
	c.idle()
	c.keys("/he\t")
	c.waitScreen("/help completed", func(rows []string) bool { return rowWith(rows, "> /help") >= 0 })
	c.keys("\r")
	c.see("/queue [delete N | send N]")
	c.keys("/q\t")
	c.waitScreen("the candidates listed", func(rows []string) bool { return rowWith(rows, "/queue") >= 0 })
	c.keys("\x15") // Ctrl-U
	// Alt-Enter starts a new line; Enter sends both.
	c.keys("first line\x1b\rsecond line")
	c.waitScreen("two input rows", func(rows []string) bool {
		r := rowWith(rows, "> first line")
		return r >= 0 && rowWith(rows, "  second line") == r+1
	})
	c.keys("\r")
	c.see("Got both lines.")
}

func TestChatColourFollowsNoColorAndTheColorFlag(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    string // NO_COLOR's value, or none
		args   []string
		colour bool
	}{
		{"auto", "", nil, true},
		{"NO_COLOR", "NO_COLOR=1", nil, false},
		{"never", "", []string{"--color", "never"}, false},
		{"always despite NO_COLOR", "NO_COLOR=1", []string{"--color", "always"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, proj := newDataRoot(t, `{"turns":[{"steps":[{"text":"# Heading\n\nplain"}]}]}`)
			t.Setenv("NO_COLOR", "")
			if tc.env == "" {
				os.Unsetenv("NO_COLOR")
			} else {
				t.Setenv("NO_COLOR", "1")
			}
			c := startChat(t, data, proj, tc.args...)
			c.idle()
			c.keys("show\r")
			c.see("Heading")
			c.see(" tokens")
			fg, bold := c.styleAt("Heading")
			if fg != tc.colour || !bold {
				t.Fatalf("the heading: coloured %v, bold %v; want coloured %v and bold", fg, bold, tc.colour)
			}
		})
	}
}

func TestChatTakesAFirstPromptAsWords(t *testing.T) {
	data, proj := newDataRoot(t, `{"turns":[{"match":"first words","steps":[{"text":"Answered at once."}]}]}`)
	c := startChat(t, data, proj, "first", "words")
	c.see("> first words")
	c.see("Answered at once.")
}
