//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Probe asks the kernel which Landlock ABI it offers.
func Probe() Status {
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case err != nil:
		return Status{Mechanism: "landlock", Reason: fmt.Sprintf("this Linux kernel does not offer Landlock (%v); it needs Linux 6.7 or later with Landlock enabled (lsm=landlock)", err)}
	case abi < MinABI:
		return Status{Mechanism: "landlock", ABI: abi, Reason: fmt.Sprintf("this Linux kernel offers Landlock ABI %d, and the sandbox needs ABI %d (Linux 6.7 or later) to deny TCP connections and truncation", abi, MinABI)}
	}
	return Status{Available: true, Mechanism: "landlock", ABI: abi}
}

// Rights, as Landlock names them.
const (
	fileRead  = ll.AccessFSExecute | ll.AccessFSReadFile
	fileWrite = fileRead | ll.AccessFSWriteFile | ll.AccessFSTruncate
	dirRead   = fileRead | ll.AccessFSReadDir
	dirWrite  = dirRead | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer
)

// ruleset builds the Landlock configuration and rules of p for ABI abi.
// Handled are the file rights up to ABI 5 (device ioctls are granted
// wherever reading is, so terminals keep working), TCP connect and bind
// unless p allows the network, and from ABI 6 connecting to abstract Unix
// sockets outside the sandbox unless p allows the network. Rights of
// later ABIs (pathname Unix sockets, UDP) are not handled: docs/configuration.md
// says what the sandbox leaves open.
func ruleset(p Policy, abi int) (landlock.Config, []landlock.Rule, error) {
	handled := landlock.AccessFSSet(dirWrite)
	ioctl := landlock.AccessFSSet(0)
	if abi >= 5 {
		ioctl = ll.AccessFSIoctlDev
		handled |= ioctl
	}
	args := []any{handled}
	if !p.Network {
		args = append(args, landlock.AccessNetSet(ll.AccessNetBindTCP|ll.AccessNetConnectTCP))
		if abi >= 6 {
			args = append(args, landlock.ScopedSet(ll.ScopeAbstractUnixSocket))
		}
	}
	cfg, err := landlock.NewConfig(args...)
	if err != nil {
		return landlock.Config{}, nil, fmt.Errorf("landlock config: %w", err)
	}
	var rules []landlock.Rule
	for _, g := range plan(p) {
		var rights landlock.AccessFSSet
		switch {
		case g.lvl == levelList:
			rights = ll.AccessFSReadDir
		case g.lvl == levelRead && g.dir:
			rights = dirRead | ioctl
		case g.lvl == levelRead:
			rights = fileRead | ioctl
		case g.dir:
			rights = dirWrite | ioctl
		default:
			rights = fileWrite | ioctl
		}
		// A path removed since plan looked at it is skipped, not fatal.
		rules = append(rules, landlock.PathAccess(rights, g.path).IgnoreIfMissing())
	}
	return *cfg, rules, nil
}

// Start starts cmd under p: the command and everything it starts may do
// only what p allows. Where the kernel lacks Landlock it returns
// ErrUnavailable and starts nothing.
//
// The ruleset is built here, then enforced on a new OS thread locked to a
// goroutine that starts cmd (the fork copies that thread, rules
// included) and then ends while still locked, which makes the Go runtime
// end the thread rather than reuse it (the pattern go-landlock's
// Config.NewRulesetFD documents). A thread a locked goroutine needs is
// created by the runtime's template thread, never cloned from the
// restricted one.
func Start(cmd *exec.Cmd, p Policy) error {
	st := Probe()
	if !st.Available {
		return fmt.Errorf("%w: %s", ErrUnavailable, st.Reason)
	}
	cfg, rules, err := ruleset(p, st.ABI)
	if err != nil {
		return err
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("sandbox ruleset: %w", err)
	}
	if fd < 0 {
		return fmt.Errorf("%w: the kernel accepted no rules", ErrUnavailable)
	}
	defer unix.Close(fd)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			done <- fmt.Errorf("sandbox: no_new_privs: %w", err)
			return
		}
		if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
			done <- fmt.Errorf("sandbox: landlock_restrict_self: %w", err)
			return
		}
		done <- cmd.Start()
	}()
	return <-done
}

// RunHelper is the loop binary started as the sandbox helper (args follow
// HelperArg): it restricts the thread it runs on with the policy and execs
// the command from that thread, so the command starts sandboxed. It
// returns only when that fails, with the exit status to use (126 as a
// shell does for a command that cannot run), having said why on stderr.
func RunHelper(args []string) int {
	p, argv, err := parseHelperArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loop sandbox: %v\n", err)
		return 2
	}
	if err := execSandboxed(p, argv); err != nil {
		fmt.Fprintf(os.Stderr, "loop sandbox: %v\n", err)
	}
	return 126
}

func execSandboxed(p Policy, argv []string) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return err
	}
	st := Probe()
	if !st.Available {
		return fmt.Errorf("%w: %s", ErrUnavailable, st.Reason)
	}
	cfg, rules, err := ruleset(p, st.ABI)
	if err != nil {
		return err
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("sandbox ruleset: %w", err)
	}
	if fd < 0 {
		return fmt.Errorf("%w: the kernel accepted no rules", ErrUnavailable)
	}
	// The exec replaces every thread with the one that calls it, whose
	// rules the command keeps (go-landlock's NewRulesetFD example).
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	unix.Close(fd)
	return syscall.Exec(path, argv, os.Environ())
}
