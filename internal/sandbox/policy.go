package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Policy is what a sandboxed process may do with files and the network.
// Everything not written here is read-only: a sandboxed process reads
// (and executes) every file but those under Deny, and writes only under
// Writable.
type Policy struct {
	// Name is the policy's name for messages ("workspace-write").
	Name string
	// Writable are the files and directories that may be changed, each
	// with everything below it.
	Writable []string
	// ReadOnly are paths below a Writable one that stay read-only (Loop's
	// data root when it lies in the workspace or the temp directory).
	ReadOnly []string
	// Deny are paths that may be neither read nor written, with
	// everything below them. The names of their entries can still be
	// listed.
	Deny []string
	// Network allows TCP connect and bind; without it both fail.
	Network bool
}

// ErrUnavailable is returned by Start where the sandbox cannot be applied;
// Probe says why.
var ErrUnavailable = errors.New("the OS sandbox is not available")

// Status says whether this system can sandbox commands.
type Status struct {
	// Available is true when Start applies policies.
	Available bool
	// Mechanism names what enforces them ("landlock").
	Mechanism string
	// ABI is the kernel's Landlock ABI version (0: none).
	ABI int
	// Reason says why the sandbox is not available; empty when it is.
	Reason string
}

// String is the status in a few words for logs and banners.
func (s Status) String() string {
	if s.Available {
		return fmt.Sprintf("%s (ABI %d)", s.Mechanism, s.ABI)
	}
	return "not available: " + s.Reason
}

// MinABI is the oldest Landlock ABI the sandbox accepts: 3 is the first
// that can refuse truncating a file outside, 4 the first that can refuse
// TCP connections.
const MinABI = 4

// Summary says in one sentence what p allows, for tool errors and approval
// prompts.
func (p Policy) Summary() string {
	var b strings.Builder
	if len(p.Writable) == 0 {
		b.WriteString("writes are denied everywhere")
	} else {
		b.WriteString("writes are allowed only in ")
		b.WriteString(strings.Join(p.Writable, ", "))
	}
	if len(p.ReadOnly) > 0 {
		b.WriteString("; ")
		b.WriteString(strings.Join(p.ReadOnly, ", "))
		b.WriteString(" stays read-only")
	}
	if len(p.Deny) > 0 {
		b.WriteString("; reading ")
		b.WriteString(strings.Join(p.Deny, ", "))
		b.WriteString(" is denied")
	}
	if p.Network {
		b.WriteString("; the network is allowed")
	} else {
		b.WriteString("; TCP connect and bind are denied")
	}
	return b.String()
}

// HomePath expands a leading ~ or ~/ against home.
func HomePath(path, home string) string {
	switch {
	case path == "~":
		return home
	case strings.HasPrefix(path, "~/"):
		return filepath.Join(home, path[2:])
	}
	return path
}

// DefaultDeny lists the key stores below home that no sandboxed process
// may read.
func DefaultDeny(home string) []string {
	if home == "" {
		return nil
	}
	// Each path's elements, space-separated: Docker's config.json is not
	// Loop's (cmd/loop/shape_test.go keeps data root names to store.Layout).
	rel := []string{".ssh", ".aws", ".config gcloud", ".netrc", ".docker config.json", ".gnupg"}
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(append([]string{home}, strings.Fields(r)...)...)
	}
	return out
}
