package main

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/loopdev/loop/internal/testenv"
)

// terminalUIPackages are the import path prefixes of the terminal UI of
// `loop chat` and the libraries it is built on: what a server, spawned by
// an editor with pipes, never runs. docs/performance.md, "Start-up".
var terminalUIPackages = []string{
	"github.com/loopdev/loop/internal/tui",
	"charm.land/",
	"github.com/charmbracelet/",
	"github.com/alecthomas/chroma",
	"github.com/yuin/goldmark",
	"github.com/muesli/",
	"github.com/lucasb-eyer/go-colorful",
	"github.com/mattn/go-runewidth",
	"github.com/rivo/uniseg",
	"github.com/clipperhouse/",
}

// initRecord is one line of GODEBUG=inittrace=1: a package whose
// initialisation ran, what it allocated.
type initRecord struct {
	pkg           string
	bytes, allocs int
}

// parseInitTrace reads the init lines of a GODEBUG=inittrace=1 stderr,
// "init PKG @T ms, C ms clock, B bytes, A allocs", and leaves out the rest.
func parseInitTrace(stderr string) []initRecord {
	var recs []initRecord
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			continue
		}
		recs = append(recs, initRecord{pkg: f[1], bytes: b, allocs: a})
	}
	return recs
}

// uiInitWork names the packages of the terminal UI whose initialisation
// allocated: work every process pays, the server included, before main;
// bytes is their sum.
func uiInitWork(recs []initRecord) (paid []string, bytes int) {
	for _, r := range recs {
		for _, prefix := range terminalUIPackages {
			if strings.HasPrefix(r.pkg, prefix) && (r.bytes > 0 || r.allocs > 0) {
				paid = append(paid, fmt.Sprintf("%s: %d bytes, %d allocations", r.pkg, r.bytes, r.allocs))
				bytes += r.bytes
			}
		}
	}
	return paid, bytes
}

// uiInitBudget is what the terminal UI's package initialisation may
// allocate in every process. Bubble Tea and the libraries under it
// (x/ansi's parser tables, ultraviolet, go-runewidth, termios) allocated
// about 43 KB in 65 allocations when the UI came in (docs/performance.md):
// some 0.3% of the server's idle memory. The budget keeps a library that
// builds real tables, styles or registries at init (a syntax
// highlighter's lexers, a Markdown renderer's) out of the server's start.
const uiInitBudget = 64 << 10

// TestTheTerminalUIsInitCostsTheServerLittle starts the server as an
// editor does (stdin and stdout pipes) with GODEBUG=inittrace=1, and fails
// if the packages of the terminal UI allocate more than uiInitBudget
// while initialising: package initialisation runs in every process of the
// binary, so what a UI library builds in init every server start pays for
// `loop chat` (the bound: the server's start and idle memory within 5% of
// a binary without the UI). Allocations are counted, not time, so the
// test does not depend on the machine's load.
func TestTheTerminalUIsInitCostsTheServerLittle(t *testing.T) {
	b := builtServer(t)
	paid, bytes := uiInitWork(b.inits)
	if bytes > uiInitBudget {
		t.Errorf("the server's start pays %d bytes for the terminal UI (budget %d):\n%s", bytes, uiInitBudget, strings.Join(paid, "\n"))
	}
}

// TestNoPackageOfLoopBuildsTablesBeforeMain fails when a package of
// Loop's own allocates more than 2 KiB initialising: a regular expression
// compiled, a map literal of dozens of entries or a checksum table built
// at package level is paid by every process, the server's start
// included; sync.OnceValue, a switch or the first use build them when
// they are needed. (A few sentinel errors, as most packages have, are
// far below the limit.)
func TestNoPackageOfLoopBuildsTablesBeforeMain(t *testing.T) {
	b := builtServer(t)
	const limit = 2 << 10
	for _, r := range b.inits {
		if strings.HasPrefix(r.pkg, "github.com/loopdev/loop/") && r.bytes > limit {
			t.Errorf("%s allocates %d bytes (%d allocations) when it initialises (limit %d)", r.pkg, r.bytes, r.allocs, limit)
		}
	}
}

// TestUIInitWorkNamesTheUIPackagesThatAllocate checks what the test above
// looks for, on a trace that has them.
func TestUIInitWorkNamesTheUIPackagesThatAllocate(t *testing.T) {
	trace := `init runtime @0.27 ms, 1.7 ms clock, 0 bytes, 0 allocs
init encoding/gob @8.4 ms, 1.1 ms clock, 27728 bytes, 369 allocs
init charm.land/lipgloss/v2 @9 ms, 0.1 ms clock, 512 bytes, 3 allocs
init github.com/charmbracelet/x/ansi @9 ms, 0.01 ms clock, 0 bytes, 0 allocs
init github.com/loopdev/loop/internal/tui @10 ms, 0.2 ms clock, 64 bytes, 1 allocs
time=2026-12-02T04:59:39.558Z level=INFO msg="loop serving JSON-RPC on stdin/stdout"
`
	paid, bytes := uiInitWork(parseInitTrace(trace))
	got := strings.Join(paid, "\n")
	want := "charm.land/lipgloss/v2: 512 bytes, 3 allocations\ngithub.com/loopdev/loop/internal/tui: 64 bytes, 1 allocations"
	if got != want || bytes != 576 {
		t.Errorf("got %d bytes\n%s\nwant 576\n%s", bytes, got, want)
	}
}

// server is what the tests of this file read of the loop command: the
// init trace of a server start, and the symbols of the binary.
type server struct {
	inits   []initRecord
	symbols []elf.Symbol
	elfErr  error // why there are no symbols
	err     error
}

// builtServer builds the loop command once per test process, with its
// symbol table (-w drops only the debug information; the packages are
// compiled as the tests' own, under -race too, so only the link is new
// work), starts it as an editor does (stdin and stdout pipes; stdin
// holds an initialize request, then ends) with GODEBUG=inittrace=1, and
// reads its symbols. The binary is removed at once.
var builtServer = func() func(t *testing.T) *server {
	get := sync.OnceValue(func() *server {
		s := &server{}
		dir, err := os.MkdirTemp("", "loop-startup-")
		if err != nil {
			s.err = err
			return s
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "loop")
		args := []string{"build", "-ldflags=-w", "-o", bin}
		if raceEnabled {
			args = append(args, "-race")
		}
		if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
			s.err = fmt.Errorf("go build: %v\n%s", err, out)
			return s
		}
		data := filepath.Join(dir, "data")
		cmd := exec.Command(bin, "--data-dir", data, "--log-level", "error")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "HOME="+data)
		cmd.Stdin = strings.NewReader(initializeLine)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || !strings.Contains(string(out), `"result"`) {
			s.err = fmt.Errorf("the server did not answer initialize: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
			return s
		}
		if s.inits = parseInitTrace(stderr.String()); len(s.inits) == 0 {
			s.err = fmt.Errorf("no init record in the server's stderr:\n%s", stderr.String())
			return s
		}
		f, err := elf.Open(bin)
		if err != nil {
			s.elfErr = err
			return s
		}
		defer f.Close()
		syms, err := f.Symbols()
		if err != nil {
			s.elfErr = err
			return s
		}
		for _, sym := range syms {
			// Zeroed memory (bss) takes no room in the file.
			if sym.Section != elf.SHN_UNDEF && sym.Section < elf.SHN_LORESERVE && int(sym.Section) < len(f.Sections) &&
				f.Sections[sym.Section].Type != elf.SHT_NOBITS {
				s.symbols = append(s.symbols, sym)
			}
		}
		return s
	})
	return func(t *testing.T) *server {
		t.Helper()
		s := get()
		if s.err != nil {
			t.Fatal(s.err)
		}
		return s
	}
}()

// TestTheBinaryHoldsNoTableOfMegabytes fails when a symbol of the binary
// holds more than 2 MiB of bytes in the file: the o200k_base vocabulary
// as a Go map literal (3.2 MB of string headers alone, and every other
// encoding's with it) made a fifth of the binary until it was embedded as
// its bytes (internal/o200k).
func TestTheBinaryHoldsNoTableOfMegabytes(t *testing.T) {
	b := builtServer(t)
	if b.elfErr != nil {
		testenv.Missing(t, "no ELF symbol table: %v", b.elfErr)
	}
	const limit = 2 << 20
	for _, s := range b.symbols {
		if s.Size > limit {
			t.Errorf("%s holds %d bytes of the binary (limit %d)", s.Name, s.Size, limit)
		}
	}
}
