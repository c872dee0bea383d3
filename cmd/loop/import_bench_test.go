package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// writeLongLineSource writes a session file of format whose one long line
// holds a text of about mb megabytes (prose with quotes, backslashes and
// newlines, as real text has), written through a buffer so that the
// benchmark itself never holds the text.
func writeLongLineSource(b *testing.B, path, format string, mb int) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	text := func() {
		const unit = `lorem ipsum \"dolor\" sit \\ amet,\n` // JSON-escaped
		for n := 0; n < mb<<20; n += len(unit) {
			w.WriteString(unit)
		}
	}
	const sid = "3f1c2a8e-0000-4000-8000-00000000beef"
	switch format {
	case "claude":
		w.WriteString(`{"parentUuid":null,"isSidechain":false,"cwd":"/tmp","sessionId":"` + sid + `","version":"2.1.332","type":"user","message":{"role":"user","content":"`)
		text()
		w.WriteString(`"},"uuid":"u1","timestamp":"2026-12-01T11:00:00.000Z"}` + "\n")
		w.WriteString(`{"parentUuid":"u1","isSidechain":false,"cwd":"/tmp","sessionId":"` + sid + `","version":"2.1.332","type":"assistant","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}},"uuid":"u2","timestamp":"2026-12-01T11:00:01.000Z"}` + "\n")
	case "codex":
		w.WriteString(`{"timestamp":"2026-12-01T11:00:00.000Z","type":"session_meta","payload":{"id":"019a0000-0000-7000-8000-00000000beef","cwd":"/tmp","cli_version":"0.171.0","model_provider":"openai"}}` + "\n")
		w.WriteString(`{"timestamp":"2026-12-01T11:00:01.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}}` + "\n")
		w.WriteString(`{"timestamp":"2026-12-01T11:00:02.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"`)
		text()
		w.WriteString(`"}}` + "\n")
	case "pi":
		w.WriteString(`{"type":"session","version":3,"id":"` + sid + `","timestamp":"2026-12-01T11:00:00.000Z","cwd":"/tmp"}` + "\n")
		w.WriteString(`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-12-01T11:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"`)
		text()
		w.WriteString(`"}],"timestamp":1795000000000}}` + "\n")
	default:
		b.Fatalf("format %s", format)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkImportLongLinePeakRSS imports a file whose one line is about
// 150 MB (LOOP_BENCH_LINE_MB sets another size) with the real binary, in
// each format, and reports the process's peak resident memory (ru_maxrss,
// what /usr/bin/time -v reports) in MB and as a multiple of the file's
// size (docs/performance.md, "Import": 1,074 MB, 7x, before; target 2-3x).
// The export is the first format's session exported again. The files are
// written once per run, in the benchmark's temporary directory.
func BenchmarkImportLongLinePeakRSS(b *testing.B) {
	mb := 150
	if n, err := strconv.Atoi(os.Getenv("LOOP_BENCH_LINE_MB")); err == nil && n > 0 {
		mb = n
	}
	bin := buildLoop(b)
	dir := b.TempDir()
	run := func(b *testing.B, args ...string) *os.ProcessState {
		b.Helper()
		cmd := exec.Command(bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("loop %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		if args[0] == "export" {
			if err := os.WriteFile(filepath.Join(dir, "export.json"), out, 0o600); err != nil {
				b.Fatal(err)
			}
		}
		return cmd.ProcessState
	}
	for _, format := range []string{"claude", "codex", "pi", "export"} {
		src := filepath.Join(dir, format+".jsonl")
		if format == "export" {
			// The session the claude file became, exported: one line
			// of JSON holding the same text.
			data := filepath.Join(dir, "export-source")
			run(b, "import", "--data-dir", data, "--cwd", dir, filepath.Join(dir, "claude.jsonl"))
			run(b, "export", "--data-dir", data, "--format", "json", "3f1c2a8e-0000-4000-8000-00000000beef")
			src = filepath.Join(dir, "export.json")
		} else {
			writeLongLineSource(b, src, format, mb)
		}
		fi, err := os.Stat(src)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(format, func(b *testing.B) {
			var peakKB int64
			i := 0
			for b.Loop() {
				i++
				st := run(b, "import", "--data-dir", filepath.Join(dir, fmt.Sprintf("data-%s-%d", format, i)), "--cwd", dir, src)
				if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
					peakKB = max(peakKB, ru.Maxrss)
				} else {
					b.Skip("no rusage on this system")
				}
				b.StopTimer()
				os.RemoveAll(filepath.Join(dir, fmt.Sprintf("data-%s-%d", format, i)))
				b.StartTimer()
			}
			b.ReportMetric(float64(fi.Size())/(1<<20), "file-MB")
			b.ReportMetric(float64(peakKB)/1024, "peak-MB")
			b.ReportMetric(float64(peakKB)*1024/float64(fi.Size()), "peak/file")
		})
	}
}
