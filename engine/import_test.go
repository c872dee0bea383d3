package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loopdev/loop/internal/testenv"

	"github.com/google/uuid"
	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/store"
)

const codexFixture = "../internal/importer/testdata/codex/v0.171.0-rollout-5bb4.jsonl"
const codexID = "01a23165-5bb4-72d2-a1a7-c81e17211982"

// transcriptDir writes n distinct copies of a real Codex rollout (each
// with its own session id) into a fresh directory tree, with a file of
// no known format beside them.
func transcriptDir(t testing.TB, n int) string {
	t.Helper()
	src, err := os.ReadFile(codexFixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("%02d", i%7))
		if err := os.MkdirAll(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		id := uuid.NewString()
		data := strings.ReplaceAll(string(src), codexID, id)
		if err := os.WriteFile(filepath.Join(sub, "rollout-"+id+".jsonl"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.json"), []byte(`{"hello":"world"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newImportEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Options{DataRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestImportDirectoryRecursesAndReimportsNothing(t *testing.T) {
	dir := transcriptDir(t, 12)
	e := newImportEngine(t)
	cwd := t.TempDir()
	var files []string
	opts := engine.ImportOptions{Cwd: cwd, Progress: func(r engine.ImportResult) { files = append(files, r.File) }}
	tot, err := e.Import(context.Background(), []string{dir}, opts)
	if err != nil || tot != (engine.ImportTotals{Imported: 12, Skipped: 1}) {
		t.Fatalf("first import: %+v, %v", tot, err)
	}
	if len(files) != 13 {
		t.Errorf("progress heard of %d files, want 13", len(files))
	}
	tot, err = e.Import(context.Background(), []string{dir}, opts)
	if err != nil || tot != (engine.ImportTotals{Existed: 12, Skipped: 1}) {
		t.Fatalf("second import: %+v, %v; want every session found again", tot, err)
	}
	ws, _ := e.AddWorkspace(cwd, "")
	list, err := e.List(ws.ID, false)
	if err != nil || len(list) != 12 {
		t.Fatalf("list: %d sessions, %v", len(list), err)
	}
}

// TestImportDirectoryHoldsOneFileAtATime: what an import keeps alive does
// not grow with the number of files: memory is bounded by one file (the
// peak is BenchmarkImportDirectory's, docs/performance.md).
func TestImportDirectoryHoldsOneFileAtATime(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 80 files")
	}
	dir := transcriptDir(t, 80)
	fi, _ := os.Stat(codexFixture)
	e := newImportEngine(t)
	var live []uint64
	_, err := e.Import(context.Background(), []string{dir}, engine.ImportOptions{Cwd: t.TempDir(), Progress: func(engine.ImportResult) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		live = append(live, ms.HeapAlloc)
	}})
	if err != nil {
		t.Fatal(err)
	}
	early, late := live[10], live[len(live)-1]
	// Keeping the files would add 70 of them (5.8 MB); the margin of a
	// few files absorbs the runtime's own noise.
	if late > early && late-early > 4*uint64(fi.Size()) {
		t.Errorf("live heap grew from %d to %d bytes over 70 files of %d bytes: the import keeps files", early, late, fi.Size())
	}
}

func TestImportOfAMalformedFileFailsAndWritesNothing(t *testing.T) {
	e := newImportEngine(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"format":"loop-export","version":1,"session":{"format":"loop-session","version":1,"messageCount":2},"messages":[]}`), 0o600)
	unknown := filepath.Join(t.TempDir(), "unknown.jsonl")
	os.WriteFile(unknown, []byte("{\"hello\":1}\n"), 0o600)
	var errs []string
	tot, err := e.Import(context.Background(), []string{bad, unknown}, engine.ImportOptions{Cwd: t.TempDir(), Progress: func(r engine.ImportResult) {
		if r.Err != nil {
			errs = append(errs, r.Err.Error())
			if engine.CodeOf(r.Err) != engine.CodeInvalidParams {
				t.Errorf("%s: code %s, want invalid_params", r.File, engine.CodeOf(r.Err))
			}
		}
	}})
	if err != nil || tot != (engine.ImportTotals{Failed: 2}) {
		t.Fatalf("totals %+v, %v: named files of no known format fail", tot, err)
	}
	for _, msg := range errs {
		if strings.Contains(msg, "\n") {
			t.Errorf("error %q is not one line", msg)
		}
	}
	ws, err := e.Workspaces()
	if err != nil || len(ws) != 0 {
		t.Errorf("workspaces %v, %v: a failed import registers nothing", ws, err)
	}
	if _, err := os.Stat(filepath.Join(e.Root().Dir(), "sessions")); err == nil {
		if entries, _ := os.ReadDir(filepath.Join(e.Root().Dir(), "sessions")); len(entries) > 0 {
			t.Errorf("a failed import wrote %d session scopes", len(entries))
		}
	}
}

func TestImportWithoutCwdUsesTheSourcesDirectoryElseTheFallback(t *testing.T) {
	e := newImportEngine(t)
	src, _ := os.ReadFile(codexFixture)
	here := t.TempDir()
	named := t.TempDir()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(file, []byte(strings.ReplaceAll(string(src), "/tmp/i16/cxproj-v0.171.0", named)), 0o600)
	gone := filepath.Join(t.TempDir(), "g.jsonl")
	os.WriteFile(gone, []byte(strings.ReplaceAll(strings.ReplaceAll(string(src), "/tmp/i16/cxproj-v0.171.0", "/nonexistent/i16"), codexID, uuid.NewString())), 0o600)
	var got []engine.ImportResult
	if _, err := e.Import(context.Background(), []string{file, gone}, engine.ImportOptions{Fallback: here, Progress: func(r engine.ImportResult) { got = append(got, r) }}); err != nil {
		t.Fatal(err)
	}
	if got[0].Err != nil || got[0].Cwd != named || got[1].Err != nil || got[1].Cwd != here {
		t.Errorf("cwds %q and %q (%v, %v), want %q (named) and %q (fallback)", got[0].Cwd, got[1].Cwd, got[0].Err, got[1].Err, named, here)
	}
	// Without a fallback, a source naming a directory that is gone fails.
	var failed error
	if _, err := e.Import(context.Background(), []string{gone}, engine.ImportOptions{Progress: func(r engine.ImportResult) { failed = r.Err }}); err != nil {
		t.Fatal(err)
	}
	if engine.CodeOf(failed) != engine.CodeInvalidParams {
		t.Errorf("no fallback, directory gone: %v, want invalid_params", failed)
	}
}

// BenchmarkImportDirectory imports a directory of 1,000 real Codex
// rollouts (83 KB each, 83 MB in all) and reports the peak of the live
// heap while it runs: bounded by one file, not by the directory.
func BenchmarkImportDirectory(b *testing.B) {
	const n = 1000
	dir := transcriptDir(b, n)
	b.ReportAllocs()
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		e := newImportEngine(b)
		runtime.GC()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			for {
				metrics.Read(s)
				peak = max(peak, s[0].Value.Uint64())
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		b.StartTimer()
		tot, err := e.Import(context.Background(), []string{dir}, engine.ImportOptions{Cwd: b.TempDir()})
		b.StopTimer()
		close(stop)
		<-done
		if err != nil || tot.Imported != n {
			b.Fatalf("%+v %v", tot, err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// A named FIFO, a device and a file larger than an import reads fail at
// once with invalid_params, read nothing and write nothing: reading them
// whole would block forever or exhaust memory.
func TestImportOfAFifoADeviceOrAHugeFileFailsWithoutReadingIt(t *testing.T) {
	e := newImportEngine(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testenv.Missing(t, "mkfifo: %v", err)
	}
	huge := filepath.Join(dir, "huge.jsonl")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk space, and nothing to read but zeros.
	if err := f.Truncate(1 << 40); err != nil {
		testenv.Missing(t, "truncate: %v", err)
	}
	f.Close()
	paths := []string{fifo, huge}
	if _, err := os.Stat("/dev/zero"); err == nil {
		paths = append(paths, "/dev/zero")
	}
	var failed []string
	tot, err := e.Import(context.Background(), paths, engine.ImportOptions{Cwd: t.TempDir(), Progress: func(r engine.ImportResult) {
		if r.Err == nil || engine.CodeOf(r.Err) != engine.CodeInvalidParams {
			t.Errorf("%s: %v, want invalid_params", r.File, r.Err)
		}
		failed = append(failed, r.File)
	}})
	if err != nil || tot != (engine.ImportTotals{Failed: len(paths)}) {
		t.Fatalf("totals %+v, %v; failed %v", tot, err, failed)
	}
}

// A named symbolic link to a directory is walked like the directory
// (links met inside it are still not followed, so a loop cannot trap the
// walk); before, the walk stopped at the link and imported nothing.
func TestImportOfALinkToADirectoryWalksTheDirectory(t *testing.T) {
	dir := transcriptDir(t, 3)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		testenv.Missing(t, "symlink: %v", err)
	}
	// A loop inside: a link to its own parent.
	if err := os.Symlink(dir, filepath.Join(dir, "00", "loop")); err != nil {
		t.Fatal(err)
	}
	e := newImportEngine(t)
	tot, err := e.Import(context.Background(), []string{link}, engine.ImportOptions{Cwd: t.TempDir()})
	if err != nil || tot != (engine.ImportTotals{Imported: 3, Skipped: 1}) {
		t.Fatalf("import of a link: %+v, %v; want 3 imported, 1 skipped", tot, err)
	}
}

// MigrateLegacy refuses what an import refuses: a FIFO would block its read
// forever.
func TestMigrateLegacyOfAFifoFailsWithoutReadingIt(t *testing.T) {
	e, _ := engine.New(engine.Options{DataRoot: t.TempDir()})
	fifo := filepath.Join(t.TempDir(), "pi.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		testenv.Missing(t, "no FIFOs here: %v", err)
	}
	_, err := e.MigrateLegacy(fifo, t.TempDir())
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Code != engine.CodeInvalidParams {
		t.Fatalf("MigrateLegacy of a FIFO: %v, want invalid_params", err)
	}
}

// An independent chat exported as JSON comes back as an independent chat,
// in a private working directory of its own, in this data root or another:
// the directory it names is the original chat's, and registering it would
// turn the chat into a workspace's session. Imported again, it is found.
func TestImportOfAnIndependentChatExportIsAnIndependentChat(t *testing.T) {
	h := newHarness(t, `{"turns":[{"steps":[{"text":"an answer"}]}]}`)
	s, err := h.e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	if got := h.prompt(s, "r1", "a question"); got.Outcome != engine.OutcomeCompleted {
		t.Fatalf("prompt: %+v", got.Error)
	}
	out, err := h.e.Export(s.ID(), engine.ExportJSON)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "chat.json")
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, e := range []*engine.Engine{h.e, newImportEngine(t)} {
		before, _ := e.Workspaces()
		var got []engine.ImportResult
		for range 2 {
			if _, err := e.Import(context.Background(), []string{file}, engine.ImportOptions{Progress: func(r engine.ImportResult) { got = append(got, r) }}); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != 2 || got[0].Err != nil || got[1].Err != nil || got[0].WorkspaceID != "" || !got[1].Existed || got[1].SessionID != got[0].SessionID {
			t.Fatalf("want an independent chat, then the same one found again: %+v", got)
		}
		if got[0].Cwd == s.Cwd() || !store.CwdExists(got[0].Cwd) {
			t.Fatalf("the imported chat works in %q, not a private directory of its own (the original's is %q)", got[0].Cwd, s.Cwd())
		}
		if after, _ := e.Workspaces(); len(after) != len(before) {
			t.Fatalf("the import registered a workspace: %+v", after)
		}
		list, err := e.List("", false)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, sum := range list {
			found = found || sum.ID == got[0].SessionID
		}
		if !found {
			t.Fatalf("the imported chat is not among the independent chats: %+v", list)
		}
	}
}

// refusedExport is a Loop export that parses but that the store refuses:
// its prompt timing names messages past its one-message history.
const refusedExport = `{"format":"loop-export","version":1,"exportedAt":1,"session":{"format":"loop-session","version":1,"id":"0190d1c4-8b5e-7c3a-9f1e-2b7c4d5e6f70","cwd":"/nonexistent","createdAt":1,"updatedAt":2,"messageCount":1,"userMessageCount":1},` +
	`"messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}],"runtime":[],"timings":[{"userMessageIndex":0,"messageStartIndex":9,"startedAt":1}]}`

// A file that fails to import, for whatever reason, leaves the workspace
// registry as it was: the directory it would have joined is not
// registered, and one that was removed stays removed.
func TestImportThatFailsLeavesTheWorkspaceRegistryAsItWas(t *testing.T) {
	e := newImportEngine(t)
	dir := t.TempDir()
	refused := filepath.Join(dir, "refused.json")
	os.WriteFile(refused, []byte(refusedExport), 0o600)
	pi := filepath.Join(dir, "bad-pi.jsonl")
	os.WriteFile(pi, []byte(`{"type":"session","version":9,"id":"x","cwd":"`+dir+`"}`+"\n"), 0o600)
	registry := filepath.Join(e.Root().Dir(), "workspaces.json")
	removed := t.TempDir()
	ws, err := e.AddWorkspace(removed, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RemoveWorkspace(context.Background(), ws.ID); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(registry)
	if err != nil {
		t.Fatal(err)
	}
	for _, cwd := range []string{t.TempDir(), removed} {
		var failed error
		tot, err := e.Import(context.Background(), []string{refused}, engine.ImportOptions{Cwd: cwd, Progress: func(r engine.ImportResult) { failed = r.Err }})
		if err != nil || tot != (engine.ImportTotals{Failed: 1}) || failed == nil {
			t.Fatalf("import into %s: %+v, %v, %v: want one failure", cwd, tot, err, failed)
		}
	}
	if _, err := e.MigrateLegacy(pi, ""); err == nil {
		t.Fatal("migrating a pi file of an unknown version succeeded")
	}
	if list, err := e.Workspaces(); err != nil || len(list) != 0 {
		t.Errorf("workspaces %v, %v: a failed import registers nothing", list, err)
	}
	if after, _ := os.ReadFile(registry); string(after) != string(before) {
		t.Errorf("the registry changed:\n%s\nwas\n%s", after, before)
	}
}

// An interrupted turn of a real Claude Code transcript is stored as the
// engine stores a run the user stopped: an assistant reply with
// stopReason aborted, and the session can be resumed from it, since the
// transcript ends with a stop.
func TestImportedInterruptedTurnIsStoredAsAnAbortedReply(t *testing.T) {
	e := newImportEngine(t)
	var res engine.ImportResult
	if _, err := e.Import(context.Background(), []string{"../internal/importer/testdata/claude/v2.1.332-interrupted-cf1b9b87.jsonl"}, engine.ImportOptions{Cwd: t.TempDir(), Progress: func(r engine.ImportResult) { res = r }}); err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	s, err := e.Session(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	msgs := snap.State.Messages
	last := msgs[len(msgs)-1]
	if last.Role != convo.RoleAssistant || last.StopReason != convo.StopAborted || !snap.State.CanResume {
		t.Errorf("last message %+v (canResume %v), want an aborted reply that can be resumed", last, snap.State.CanResume)
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Role == convo.RoleUser && msgs[i-1].Role == convo.RoleUser {
			t.Errorf("messages %d and %d: two user messages in a row", i-1, i)
		}
	}
}
