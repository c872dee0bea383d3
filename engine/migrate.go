package engine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// Migrated names the session a legacy file became.
type Migrated struct {
	SessionID   string
	WorkspaceID string
	Cwd         string
	Messages    int
}

// MigrateLegacy converts a pi JSONL session file (Loop's legacy format)
// into a session of the workspace of its working directory, registering
// that workspace when needed. cwd, when set, replaces the file's own
// (which must otherwise still exist). The original file is not changed;
// migrating it again, unchanged, returns the same session.
func (e *Engine) MigrateLegacy(path, cwd string) (Migrated, error) {
	// The same rule as an import's sources (readSource): a FIFO or a device
	// would block the read forever or exhaust memory.
	if fi, err := os.Stat(path); err != nil {
		return Migrated{}, wrapError(CodeInvalidParams, err, "migrate %s", path)
	} else if !fi.Mode().IsRegular() || fi.Size() > maxImportBytes {
		return Migrated{}, errorf(CodeInvalidParams, "migrate %s: not a regular file of at most %d bytes", path, maxImportBytes)
	}
	if cwd == "" {
		var err error
		if cwd, err = legacyCwd(path); err != nil {
			return Migrated{}, wrapError(CodeInvalidParams, err, "migrate %s", path)
		}
	}
	// The workspace is registered only once the session is written, so a
	// file that fails leaves the registry as it was.
	st, err := e.root.MigrateLegacyInto(path, cwd)
	if err != nil {
		return Migrated{}, storageError(err, "migrate "+path)
	}
	defer st.Close()
	h := st.Header()
	m := Migrated{SessionID: st.ID(), Cwd: h.Cwd, Messages: len(st.Messages())}
	if h.WorkspaceID != nil {
		m.WorkspaceID = *h.WorkspaceID
	}
	return m, nil
}

// legacyCwd reads the cwd of a pi file's first line, its session header.
func legacyCwd(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return "", fmt.Errorf("empty file")
	}
	var h struct {
		Type string `json:"type"`
		Cwd  string `json:"cwd"`
	}
	if err := json.Unmarshal(line, &h); err != nil || h.Type != "session" || h.Cwd == "" {
		return "", fmt.Errorf("the first line is not a pi session header with a cwd")
	}
	return h.Cwd, nil
}
