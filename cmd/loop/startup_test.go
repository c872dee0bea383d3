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
	"testing"
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
// allocated: work every process pays, the server included, before main.
func uiInitWork(recs []initRecord) []string {
	var paid []string
	for _, r := range recs {
		for _, prefix := range terminalUIPackages {
			if strings.HasPrefix(r.pkg, prefix) && (r.bytes > 0 || r.allocs > 0) {
				paid = append(paid, fmt.Sprintf("%s: %d bytes, %d allocations", r.pkg, r.bytes, r.allocs))
			}
		}
	}
	return paid
}

// TestTheServerDoesNotInitialiseTheTerminalUI starts the server as an
// editor does (stdin and stdout pipes) with GODEBUG=inittrace=1, and fails
// if a package of the terminal UI allocated while initialising: package
// initialisation runs in every process of the binary, so a UI library that
// builds its tables, styles or registries in init makes every server start
// pay for `loop chat` (issue's bound: the server's start and idle memory
// within 5% of a binary without the UI). Allocations are counted, not
// time, so the test does not depend on the machine's load.
func TestTheServerDoesNotInitialiseTheTerminalUI(t *testing.T) {
	bin := buildBinary(t)
	data := t.TempDir()
	cmd := exec.Command(bin, "--data-dir", data, "--log-level", "error")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "HOME="+data)
	cmd.Stdin = strings.NewReader(initializeLine)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"result"`) {
		t.Fatalf("the server did not answer initialize: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	recs := parseInitTrace(stderr.String())
	if len(recs) == 0 {
		t.Fatalf("no init record in the server's stderr:\n%s", stderr.String())
	}
	for _, p := range uiInitWork(recs) {
		t.Errorf("the server initialised a package of the terminal UI: %s", p)
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
	got := strings.Join(uiInitWork(parseInitTrace(trace)), "\n")
	want := "charm.land/lipgloss/v2: 512 bytes, 3 allocations\ngithub.com/loopdev/loop/internal/tui: 64 bytes, 1 allocations"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// buildBinary builds the loop command, with its symbol table (-w drops
// only the debug information), into a temporary directory. The packages
// are compiled as the test's own (under -race too), so only the link is
// new work.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "loop")
	args := []string{"build", "-ldflags=-w", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestTheBinaryHoldsNoTableOfMegabytes fails when a symbol of the binary
// holds more than 2 MiB of bytes in the file: the o200k_base vocabulary
// as a Go map literal (3.2 MB of string headers alone, and every other
// encoding's with it) made a fifth of the binary until it was embedded as
// its bytes (internal/o200k). Zeroed memory (bss) takes no room in the
// file and is not counted.
func TestTheBinaryHoldsNoTableOfMegabytes(t *testing.T) {
	f, err := elf.Open(buildBinary(t))
	if err != nil {
		t.Skipf("not an ELF binary: %v", err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Skipf("no symbol table: %v", err)
	}
	const limit = 2 << 20
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE || int(s.Section) >= len(f.Sections) {
			continue
		}
		if f.Sections[s.Section].Type == elf.SHT_NOBITS {
			continue
		}
		if s.Size > limit {
			t.Errorf("%s holds %d bytes of the binary (limit %d)", s.Name, s.Size, limit)
		}
	}
}
