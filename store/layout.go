package store

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// This file is the one place that spells the names of the paths under a
// data root (docs/storage.md, "Data root"; docs/configuration.md). The
// store, the engine and the commands ask Layout for a path; none joins
// one by hand (cmd/loop/shape_test.go checks). What an index keeps inside
// a scope (.summaries, .search) and what a trace directory holds are those
// formats' own (store/internal/summary, store/search, docs/traces.md).

// Names directly under the data root.
const (
	configFile      = "config.json"      // the configuration (docs/configuration.md)
	preferencesFile = "preferences.json" // the remembered model choice
	registryFile    = "workspaces.json"  // the workspace registry
	sessionsDirName = "sessions"         // <scope>/<sessionId>/
	tracesDirName   = "traces"           // <scope>/<sessionId>/ (docs/traces.md)
	skillsDirName   = "skills"           // global skills: <name>/SKILL.md

	// privateCwdSuffix makes <root>-workspaces, the sibling of the root
	// that holds independent sessions' private working directories.
	privateCwdSuffix = "-workspaces"
)

// globalScope is the directory name of the independent collection, under
// sessions/ and traces/ alike.
const globalScope = "global"

// File names inside a session directory.
const (
	headerFile   = "header.json"
	messagesFile = "messages.jsonl"
	indexFile    = "index.bin"
	runtimeFile  = "runtime.jsonl"
	timingsFile  = "timings.jsonl"
	queueFile    = "queue.json" // queued inputs and accepted request ids (store/queue.go)
	// journalFile is the journal of the run in progress (store/journal.go):
	// empty or absent when no run is under way.
	journalFile = "journal.jsonl"
	// fileCheckpointsDir holds the session's file checkpoints
	// (store/filecheckpoints.go): what Loop needs to put the workspace's
	// files back to their state before a run.
	fileCheckpointsDir = "file-checkpoints"
)

// Names inside a session's file-checkpoints directory.
const (
	checkpointLogFile  = "log"   // the records and the pre-images of write and edit
	checkpointGitDir   = "git"   // the private git directory of bash snapshots
	checkpointGitIndex = "index" // its index file, never the workspace's
)

// workspaceDirName is Loop's folder inside a workspace; its skills/ holds
// the workspace's own skills, the one path Loop reads there, named here
// beside the data root's skills/.
const workspaceDirName = ".loop"

// Layout names the paths under one data root. It does no I/O and checks
// no id: the caller has (Root checks them before any session path is
// used). The zero Layout names paths relative to the current directory.
type Layout struct {
	root string
}

// NewLayout returns the layout of the data root at root, which is used as
// it is: pass it absolute and clean (ResolveDataRoot), as OpenRoot does.
func NewLayout(root string) Layout { return Layout{root: root} }

// Root is the data root itself.
func (l Layout) Root() string { return l.root }

// Config is config.json.
func (l Layout) Config() string { return filepath.Join(l.root, configFile) }

// Preferences is preferences.json, the remembered model choice.
func (l Layout) Preferences() string { return filepath.Join(l.root, preferencesFile) }

// Registry is workspaces.json, the workspace registry.
func (l Layout) Registry() string { return filepath.Join(l.root, registryFile) }

// Skills is the folder of global skills.
func (l Layout) Skills() string { return filepath.Join(l.root, skillsDirName) }

// Sessions is the folder of every scope's sessions.
func (l Layout) Sessions() string { return filepath.Join(l.root, sessionsDirName) }

// Scope is the folder of one scope's sessions: the workspace's, or the
// independent sessions' when workspaceID is "".
func (l Layout) Scope(workspaceID string) string {
	return filepath.Join(l.Sessions(), ScopeName(workspaceID))
}

// Session is a session's directory.
func (l Layout) Session(workspaceID, id string) string {
	return filepath.Join(l.Scope(workspaceID), id)
}

// Journal is a session's journal of the run in progress
// (docs/storage.md, "The journal of the run in progress").
func (l Layout) Journal(workspaceID, id string) string {
	return filepath.Join(l.Session(workspaceID, id), journalFile)
}

// FileCheckpoints is a session's file-checkpoints directory
// (docs/storage.md, "File checkpoints").
func (l Layout) FileCheckpoints(workspaceID, id string) string {
	return fileCheckpointsOf(l.Session(workspaceID, id))
}

func fileCheckpointsOf(sessionDir string) string {
	return filepath.Join(sessionDir, fileCheckpointsDir)
}

// CheckpointGitDir is the private git directory inside a file-checkpoints
// directory dir: bash's snapshots of a git workspace, kept apart from the
// workspace's own repository.
func CheckpointGitDir(dir string) string { return filepath.Join(dir, checkpointGitDir) }

// CheckpointGitIndex is the index file the snapshots use
// (GIT_INDEX_FILE), never the workspace's.
func CheckpointGitIndex(dir string) string { return filepath.Join(dir, checkpointGitIndex) }

func checkpointLog(dir string) string { return filepath.Join(dir, checkpointLogFile) }

// Traces is the folder of every scope's session traces.
func (l Layout) Traces() string { return filepath.Join(l.root, tracesDirName) }

// Trace is a session's trace directory (docs/traces.md).
func (l Layout) Trace(workspaceID, id string) string {
	return filepath.Join(l.Traces(), ScopeName(workspaceID), id)
}

// PrivateCwd is the private working directory id of an independent
// session: <root>-workspaces/<id>, a sibling of the root so generated
// files stay outside Loop's storage.
func (l Layout) PrivateCwd(id string) string {
	return filepath.Join(l.root+privateCwdSuffix, id)
}

// Recovery is where a session's unsaved result goes when even the last
// save failed: beside the session's directory (docs/storage.md).
func (l Layout) Recovery(workspaceID, id string, ms int64) string {
	return filepath.Join(l.Scope(workspaceID), RecoveryName(id, ms))
}

// RecoveryName is the file name of a recovery file written at ms (Unix
// milliseconds), wherever it is written (the temp directory, when the
// data root refuses it too).
func RecoveryName(id string, ms int64) string {
	return fmt.Sprintf("%s%s-%d.json", recoveryPrefix, id, ms)
}

const recoveryPrefix = "loop-recovery-"

// RecoveryOf reports whether name is the file name of a recovery file of
// session id (RecoveryName), and the Unix milliseconds it was written at.
func RecoveryOf(name, id string) (ms int64, ok bool) {
	rest, found := strings.CutPrefix(name, recoveryPrefix+id+"-")
	if !found {
		return 0, false
	}
	digits, found := strings.CutSuffix(rest, ".json")
	if !found || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	ms, err := strconv.ParseInt(digits, 10, 64)
	return ms, err == nil
}

// Path is a path config.json gives relative to the data root (a scripted
// model's script): as it is when absolute, else under the root.
func (l Layout) Path(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(l.root, name)
}

// ScopeName is the directory name of a scope under sessions/ and traces/:
// the workspace id, or "global" for the independent sessions ("").
func ScopeName(workspaceID string) string {
	if workspaceID == "" {
		return globalScope
	}
	return workspaceID
}

// ScopeWorkspace is the workspace id a scope directory name stands for:
// "" for the independent sessions' "global".
func ScopeWorkspace(name string) string {
	if name == globalScope {
		return ""
	}
	return name
}

// SessionHeader is the header file of the session directory dir, the file
// that makes a directory a session.
func SessionHeader(dir string) string { return filepath.Join(dir, headerFile) }

// IsSessionHeader reports whether path names a session's header file.
func IsSessionHeader(path string) bool { return filepath.Base(path) == headerFile }

// WorkspaceSkills is the folder of a workspace's own skills.
func WorkspaceSkills(cwd string) string { return filepath.Join(cwd, workspaceDirName, skillsDirName) }
