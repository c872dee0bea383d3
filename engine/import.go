package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/loopdev/loop/internal/importer"
	"github.com/loopdev/loop/internal/regfile"
	"github.com/loopdev/loop/store"
)

// ImportOptions say where imported sessions go and who hears of each file.
type ImportOptions struct {
	// Cwd is the directory whose workspace every imported session joins;
	// empty: the one each source names.
	Cwd string
	// Fallback is the directory used when Cwd is empty and a source names
	// none, or one that no longer exists; empty: such a source fails.
	Fallback string
	// Progress, when set, hears of every file as it is done, in order.
	Progress func(ImportResult)
}

// ImportResult is what became of one source file.
type ImportResult struct {
	File        string
	Format      string // the source format (importer.Format*); "" when unknown
	SessionID   string
	WorkspaceID string // "" for an independent chat
	Cwd         string
	Messages    int
	// Existed: an earlier import of the same source (its id and checksum)
	// was found, and nothing was written.
	Existed bool
	// Skipped: a file met while walking a directory that is not a session
	// of a known format (Err says why); nothing was written.
	Skipped bool
	Err     error
	// Note says more of what was done, for a person: why a recovery file
	// became a new session.
	Note string
}

// ImportTotals counts the files of an Import.
type ImportTotals struct {
	Imported, Existed, Skipped, Failed int
}

// Import brings session files in as new sessions, with their original
// times and titles, never changing the files: Loop's JSON export, pi
// JSONL, Claude Code transcripts and Codex rollouts, the format detected
// from the content (docs/cli.md, loop import). A directory is walked
// recursively and its files that parse as a known format are imported;
// the others are skipped. Files are read and written one at a time, so
// memory is bounded by the largest file. Importing a source again, unchanged,
// finds the earlier session instead. It stops early only when ctx ends.
func (e *Engine) Import(ctx context.Context, paths []string, opts ImportOptions) (ImportTotals, error) {
	var tot ImportTotals
	report := func(r ImportResult) {
		switch {
		case r.Skipped:
			tot.Skipped++
		case r.Err != nil:
			tot.Failed++
		case r.Existed:
			tot.Existed++
		default:
			tot.Imported++
		}
		if opts.Progress != nil {
			opts.Progress(r)
		}
	}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return tot, err
		}
		fi, err := os.Stat(p)
		if err != nil {
			// Not the *PathError's words: they would name the file twice.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			report(ImportResult{File: p, Err: wrapError(CodeInvalidParams, err, "import %s", p)})
			continue
		}
		if !fi.IsDir() {
			report(e.importFile(p, true, opts))
			continue
		}
		// WalkDir does not follow links, its root's included: a named
		// link to a directory is walked from where it points (the links
		// met inside are still not followed, so no loop can trap it).
		root := p
		if resolved, err := filepath.EvalSymlinks(p); err == nil {
			root = resolved
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if err != nil {
				report(ImportResult{File: path, Err: wrapError(CodeInvalidParams, err, "import %s", path)})
				return nil
			}
			if d.Type().IsRegular() && (strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".json")) {
				report(e.importFile(path, false, opts))
			}
			return nil
		})
		if err != nil {
			return tot, err
		}
	}
	return tot, nil
}

// importFile imports one file; explicit says it was named, not found in a
// directory (where other files are passed over, not failed).
func (e *Engine) importFile(path string, explicit bool, opts ImportOptions) ImportResult {
	res := ImportResult{File: path}
	fail := func(err error) ImportResult {
		res.Err = err
		return res
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fail(wrapError(CodeInvalidParams, err, "import %s", path))
	}
	data, err := readSource(abs)
	if err != nil {
		return fail(wrapError(CodeInvalidParams, err, "import %s", path))
	}
	sum := store.Checksum(data)
	res.Format = importer.Detect(data)
	if isRecoveryFormat(res.Format) {
		// Committed into its own session, wherever Cwd points.
		return e.importRecovery(res, data, abs)
	}
	// Nothing below reads data, and the session holds nothing of it, so
	// the collector can take the source's bytes before the session is
	// encoded and written: the two are never needed together
	// (docs/performance.md, "Import").
	imp, err := importer.ConvertAs(res.Format, data, abs)
	if err != nil {
		if !explicit && (errors.Is(err, importer.ErrUnknownFormat) || errors.Is(err, importer.ErrNoConversation)) {
			res.Skipped = true
		}
		return fail(wrapError(CodeInvalidParams, err, "%s", path))
	}
	if opts.Cwd == "" && res.Format == importer.FormatLoop && imp.Header.WorkspaceID == nil {
		return e.importIndependent(res, &imp, sum)
	}
	cwd := opts.Cwd
	if cwd == "" {
		cwd = imp.Header.Cwd
		if cwd == "" || !filepath.IsAbs(cwd) || !store.CwdExists(cwd) {
			if opts.Fallback == "" {
				return fail(errorf(CodeInvalidParams, "%s: the directory it names, %q, does not exist: name a workspace to join", path, cwd))
			}
			cwd = opts.Fallback
		}
	}
	// The workspace is registered only once the session is written, so a
	// file the store refuses leaves the registry as it was.
	st, _, existed, err := e.root.ImportInto(&imp, sum, cwd)
	if err != nil {
		return fail(storageError(err, fmt.Sprintf("import %s", path)))
	}
	return importedResult(res, st, existed)
}

// importIndependent imports a Loop export of an independent chat as an
// independent chat again, in a private working directory of its own: the
// one it names belongs to the chat it was exported from (or to another data
// root), and registering it as a workspace would turn the chat into a
// workspace's session.
func (e *Engine) importIndependent(res ImportResult, imp *store.Imported, sum [32]byte) ImportResult {
	cwd, err := e.root.NewPrivateCwd()
	if err != nil {
		res.Err = storageError(err, "private working directory")
		return res
	}
	st, existed, err := e.root.Import(imp, sum, "", cwd)
	if existed || err != nil {
		// Found from an earlier import, or not imported: the new directory
		// stays unused.
		_ = os.Remove(cwd)
	}
	if err != nil {
		res.Err = storageError(err, fmt.Sprintf("import %s", res.File))
		return res
	}
	return importedResult(res, st, existed)
}

// importedResult fills res from the imported (or found) session st: its
// header names its workspace, also when an earlier import made it.
func importedResult(res ImportResult, st *store.Session, existed bool) ImportResult {
	defer st.Close()
	h := st.Header()
	res.SessionID, res.Cwd = st.ID(), h.Cwd
	if h.WorkspaceID != nil {
		res.WorkspaceID = *h.WorkspaceID
	}
	res.Messages, res.Existed = len(st.Messages()), existed
	return res
}

// maxImportBytes bounds one source file: it is read whole (docs/cli.md,
// loop import), so a larger one would take the memory of about three
// times its size.
const maxImportBytes = 512 << 20

// readSource reads a source file, which must be a regular file no larger
// than maxImportBytes (internal/regfile: a FIFO, a device or a file that
// grows while it is read would block the import or exhaust memory).
func readSource(path string) ([]byte, error) { return regfile.Read(path, maxImportBytes) }
