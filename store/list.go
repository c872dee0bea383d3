package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/loopdev/loop/store/internal/summary"
)

// ListOptions filters List.
type ListOptions struct {
	// Archived false lists unarchived sessions that contain user messages;
	// true lists archived ones, including older empty archived records.
	Archived bool
}

// List returns the summaries of a scope's sessions ("" is the independent
// collection), newest activity first. It reads header.json files only,
// never message logs. Sessions of another format or version are excluded
// and left untouched; they never block the list.
//
// A current-format header that is malformed is reported, not skipped: List
// returns every valid summary together with a *ListError (which wraps
// ErrMalformed and names each bad file). Callers that must not hide errors
// return it; callers that show what they can use the summaries. A storage
// failure (an unreadable directory or file) returns nil and the error.
func (r *Root) List(workspaceID string, opt ListOptions) ([]Summary, error) {
	heads, err := r.scan(workspaceID)
	var lerr *ListError
	if err != nil && !errors.As(err, &lerr) {
		return nil, err
	}
	out := summarize(heads, opt.Archived)
	return out, err
}

// Headers returns the header of every session of a scope ("" is the
// independent collection) in the current format, in directory order,
// archived and empty ones included: what List filters and orders, for a
// package that derives data from the sessions (the search index,
// store/search). Malformed headers are reported as by List, in a
// *ListError next to the valid headers.
func (r *Root) Headers(workspaceID string) ([]Header, error) {
	return r.scan(workspaceID)
}

// ScopeDir returns the directory of a scope ("" is the independent
// collection): the ScopeDir of the Commit an Observer gets for its
// sessions (store/observer.go).
func (r *Root) ScopeDir(workspaceID string) (string, error) {
	return r.scopeDir(workspaceID)
}

// listWorkers read headers in parallel: on a warm cache List is bound by
// system calls and JSON decoding, which spread over cores.
const listWorkers = 4

// scan reads the current-format headers of a scope. Malformed ones come
// back as a *ListError next to the valid headers.
func (r *Root) scan(workspaceID string) ([]Header, error) {
	heads, _, err := r.scanAll(workspaceID)
	return heads, err
}

// scanAll is scan, and also names the directories that are not valid
// sessions (no header, another format, malformed), for the summary index.
func (r *Root) scanAll(workspaceID string) ([]Header, []summary.NotSession, error) {
	sd, err := r.scopeDir(workspaceID)
	if err != nil {
		return nil, nil, err
	}
	names, err := r.sessionNames(sd)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	type result struct {
		h   Header
		ok  bool
		err error // malformed
	}
	results := make([]result, len(names))
	var next atomic.Int64
	var fatal error
	var fatalOnce sync.Once
	var wg sync.WaitGroup
	for range min(listWorkers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			head := make([]byte, listHeadSize)
			tail := make([]byte, 64)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(names) {
					return
				}
				dir := filepath.Join(sd, names[i])
				hpath := filepath.Join(dir, headerFile)
				h, err := r.readListHeader(hpath, head, tail)
				if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
					continue // not a session directory
				}
				// A type assertion, not errors.As: that would allocate per file.
				if rerr, ok := err.(*readError); ok {
					fatalOnce.Do(func() { fatal = fmt.Errorf("read %s: %w", hpath, rerr.err) })
					return
				}
				if errors.Is(err, ErrUnsupportedFormat) {
					continue
				}
				if err == nil {
					err = checkPlace(&h, dir, hpath)
				}
				results[i] = result{h: h, ok: err == nil, err: err}
			}
		}()
	}
	wg.Wait()
	if fatal != nil {
		return nil, nil, fatal
	}
	heads := make([]Header, 0, len(names))
	var others []summary.NotSession
	var lerr *ListError
	for i, res := range results {
		switch {
		case res.ok:
			heads = append(heads, res.h)
		case res.err != nil:
			if lerr == nil {
				lerr = &ListError{}
			}
			lerr.Problems = append(lerr.Problems, res.err)
			others = append(others, summary.NotSession{Name: names[i], Malformed: true})
		default:
			others = append(others, summary.NotSession{Name: names[i]})
		}
	}
	if lerr != nil {
		// Directory order is arbitrary; the error names the first.
		slices.SortFunc(lerr.Problems, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return heads, others, lerr
	}
	return heads, others, nil
}

// Find returns the scope that holds session id ("" for the independent
// collection) by looking for <scope>/<id>/header.json in each scope
// directory; it reads no logs. Unknown ids and sessions of another format or
// version are ErrSessionNotFound.
func (r *Root) Find(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("%w: %w: session id %q", ErrSessionNotFound, ErrInvalid, id)
	}
	entries, err := r.fs.ReadDir(r.sessionsDir())
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: %s", ErrSessionNotFound, id)
	}
	if err != nil {
		return "", fmt.Errorf("find session %s: %w", id, err)
	}
	scopes := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.IsDir() && (e.Name() == globalScope || validID(e.Name())) {
			scopes = append(scopes, e.Name())
		}
	}
	// The independent collection first: it needs no registered workspace.
	slices.SortStableFunc(scopes, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == globalScope:
			return -1
		case b == globalScope:
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, scope := range scopes {
		hpath := filepath.Join(r.sessionsDir(), scope, id, headerFile)
		data, err := r.fs.ReadFile(hpath)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("find session %s: %w", id, err)
		}
		ok, err := probeHeader(data, hpath)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("%w: %w: %s", ErrSessionNotFound, ErrUnsupportedFormat, hpath)
		}
		if scope == globalScope {
			return "", nil
		}
		return scope, nil
	}
	return "", fmt.Errorf("%w: %s", ErrSessionNotFound, id)
}

// listHeadSize is how much of a header List reads first. Loop's headers
// fit; only those written before timings.jsonl can hold hundreds of prompt
// timings, and then the head holds the part List decodes (docs/storage.md).
const listHeadSize = 16 << 10

// readError is a storage failure reading a header, as opposed to a verdict
// on its content.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// readListHeader reads and decodes a header for List through the buffers
// head and tail. A header larger than head costs the same as one that fits
// when parseListHead can decide from its head and end; else the whole file
// is read and decoded. Storage failures come back as *readError.
func (r *Root) readListHeader(hpath string, head, tail []byte) (Header, error) {
	data, whole, end, err := r.fs.ReadHead(hpath, head, tail)
	if err != nil {
		return Header{}, &readError{err}
	}
	if whole {
		return parseListHeader(data, hpath)
	}
	if h, ok := parseListHead(data, end, hpath); ok {
		return h, nil
	}
	data, err = r.fs.ReadFile(hpath)
	if err != nil {
		return Header{}, &readError{err}
	}
	return parseListHeader(data, hpath)
}
