package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/loopdev/loop/store/internal/fsys"
	"github.com/loopdev/loop/store/internal/storetest"
)

// readOnlyFS is a file system mounted read-only, as the kernel presents
// one: reads, directory fsyncs and flock work; everything that would
// change a file or a directory fails with EROFS.
type readOnlyFS struct{ fsys.FS }

func erofs(op, name string) error { return &os.PathError{Op: op, Path: name, Err: syscall.EROFS} }

func (f readOnlyFS) OpenFile(name string, flag int, perm os.FileMode) (fsys.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, erofs("open", name)
	}
	return f.FS.OpenFile(name, flag, perm)
}
func (readOnlyFS) Rename(o, n string) error {
	return &os.LinkError{Op: "rename", Old: o, New: n, Err: syscall.EROFS}
}
func (readOnlyFS) Mkdir(name string, perm os.FileMode) error { return erofs("mkdir", name) }
func (readOnlyFS) RemoveAll(name string) error               { return erofs("unlinkat", name) }

// A session on a read-only file system opens read-only and reads as it
// would anywhere; every write fails with ErrNotWritable (not "locked by
// another writer") and changes nothing; the lock is not kept, so a second
// reader sees the same; once the file system is writable again the next
// open writes.
func TestReadOnlyFileSystemOpensSessionsReadOnly(t *testing.T) {
	r, _ := newTestRoot(t)
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, history(3), []RuntimeRecord{rtRecord("compaction", 1)}, func(h *Header) { h.Title = "kept"; h.Unread = true })
	s.Close()
	before := snapshotDir(t, s.Dir())

	r.fs = readOnlyFS{fsys.OS{}}
	o, err := r.Open("", s.ID())
	if err != nil {
		t.Fatalf("open on a read-only file system: %v", err)
	}
	defer o.Close()
	if !o.ReadOnly() {
		t.Fatal("opened writable")
	}
	why := o.ReadOnlyReason()
	if !errors.Is(why, ErrNotWritable) || !errors.Is(why, syscall.EROFS) || errors.Is(why, ErrSessionLocked) {
		t.Fatalf("reason %v", why)
	}
	wantMessages(t, o.Messages(), history(3))
	if h := o.Header(); h.Title != "kept" || !h.Unread || len(o.Runtime()) != 1 {
		t.Fatalf("header %+v, runtime %v", h, o.Runtime())
	}
	if msgs, err := r.ReadMessages("", s.ID(), 4, 8); err != nil {
		t.Fatalf("page: %v", err)
	} else {
		wantMessages(t, msgs, history(3)[4:8])
	}
	if sums, err := r.List("", ListOptions{}); err != nil || len(sums) != 1 {
		t.Fatalf("list %v %v", sums, err)
	}

	writes := map[string]error{
		"commit":   o.Commit(history(4), nil, nil),
		"savemeta": o.SaveMeta(func(h *Header) { h.Title = "x" }),
		"archive":  o.SetArchived(true),
		"delete":   o.Delete(),
	}
	_, writes["markread"] = o.MarkRead(12)
	_, writes["pin"] = o.SetPinned(true)
	for name, err := range writes {
		if !errors.Is(err, ErrNotWritable) {
			t.Errorf("%s: %v, want ErrNotWritable", name, err)
		}
	}
	if after := snapshotDir(t, s.Dir()); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("a refused write changed the session's files")
	}

	second, err := r.Open("", s.ID())
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	if !errors.Is(second.ReadOnlyReason(), ErrNotWritable) {
		t.Fatalf("second open: %v", second.ReadOnlyReason())
	}
	second.Close()

	r.fs = fsys.OS{}
	w, err := r.Open("", s.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.ReadOnly() {
		t.Fatalf("writable again, but read-only: %v", w.ReadOnlyReason())
	}
	mustCommit(t, w, history(4), nil, nil)
}

// Files this user may read but not write (permission bits, EACCES) open
// read-only the same way.
func TestUnwritableLogsOpenReadOnly(t *testing.T) {
	r, ffs := newTestRoot(t)
	s, _ := r.Create("", t.TempDir())
	mustCommit(t, s, history(1), nil, nil)
	s.Close()
	// messages.jsonl opens writable; index.bin refuses that (the hook sees
	// no flags: its first open is the writable one) and then opens for
	// reading. The session is read-only as a whole.
	refuseOnce := func() {
		refused := false
		ffs.Arm(func(op, p string) *storetest.Fault {
			if op == "open" && filepath.Base(p) == indexFile && !refused {
				refused = true
				return &storetest.Fault{Err: &os.PathError{Op: "open", Path: p, Err: syscall.EACCES}}
			}
			return nil
		})
	}
	refuseOnce()
	o, err := r.Open("", s.ID())
	if err == nil {
		defer o.Close()
	}
	ffs.Arm(nil)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	wantMessages(t, o.Messages(), history(1))
	// The commit tries the logs again, and is refused again.
	refuseOnce()
	err = o.Commit(history(2), nil, nil)
	ffs.Arm(nil)
	if !errors.Is(err, ErrNotWritable) || !errors.Is(err, os.ErrPermission) {
		t.Fatalf("commit: %v", err)
	}
}

// The same on a real read-only mount: a child process in a mount
// namespace of its own bind-mounts the data root read-only over itself,
// then opens the session. It needs root (CAP_SYS_ADMIN): permission bits
// cannot stand in, since root ignores them.
func TestReadOnlyMountOpensSessionsReadOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a read-only bind mount needs root; TestReadOnlyFileSystemOpensSessionsReadOnly covers EROFS without one")
	}
	r, err := OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Create("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, history(2), nil, nil)
	s.Close()
	before := snapshotDir(t, s.Dir())

	cmd := childCmd(t, "readonlymount", "LOOP_STORE_ROOT="+r.Dir(), "LOOP_STORE_SESSION="+s.ID())
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("no mount namespace here (%v)", err)
		}
		t.Fatalf("child: %v: %s", err, out)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("child output %q: %v", out, err)
	}
	if res["mount"] == "unavailable" {
		t.Skipf("bind mount refused: %v", res["error"])
	}
	want := map[string]any{"probe": "erofs", "readOnly": true, "reason": "not writable", "messages": 8.0,
		"commit": "not writable", "pin": "not writable", "second": "not writable"}
	for k, v := range want {
		if res[k] != v {
			t.Fatalf("on a read-only mount: %v (want %s = %v)", res, k, v)
		}
	}
	if after := snapshotDir(t, s.Dir()); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("files changed")
	}
}

// runReadOnlyMountChild is the child of TestReadOnlyMountOpensSessionsReadOnly,
// already in a mount namespace of its own.
func runReadOnlyMountChild(root *Root, id string) int {
	dir := root.Dir()
	out := map[string]any{}
	print := func() int {
		b, _ := json.Marshal(out)
		fmt.Println(string(b))
		return 0
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		out["mount"], out["error"] = "unavailable", err.Error()
		return print()
	}
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		out["mount"], out["error"] = "unavailable", err.Error()
		return print()
	}
	describe := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, ErrNotWritable):
			return "not writable"
		case errors.Is(err, ErrSessionLocked):
			return "locked"
		}
		return err.Error()
	}
	// The kernel itself refuses, so the test is not vacuous.
	if f, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		f.Close()
		out["probe"] = "writable"
	} else if errors.Is(err, syscall.EROFS) {
		out["probe"] = "erofs"
	} else {
		out["probe"] = err.Error()
	}
	s, err := root.Open("", id)
	if err != nil {
		out["open"] = err.Error()
		return print()
	}
	defer s.Close()
	out["readOnly"], out["reason"], out["messages"] = s.ReadOnly(), describe(s.ReadOnlyReason()), len(s.Messages())
	_, pinErr := s.SetPinned(true)
	out["pin"] = describe(pinErr)
	out["commit"] = describe(s.Commit(history(3), nil, nil))
	if second, err := root.Open("", id); err != nil {
		out["second"] = err.Error()
	} else {
		out["second"] = describe(second.ReadOnlyReason())
		second.Close()
	}
	return print()
}
