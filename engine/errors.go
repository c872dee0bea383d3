package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/loopdev/loop/store"
)

// Code is the stable snake_case name of a failure. Front ends branch on it;
// messages are for people.
type Code string

// The stable codes (docs/protocol.md, "3. Errors").
const (
	CodeInvalidParams          Code = "invalid_params"
	CodeSessionNotFound        Code = "session_not_found"
	CodeWorkspaceNotFound      Code = "workspace_not_found"
	CodeBusy                   Code = "busy"
	CodePendingSave            Code = "pending_save"
	CodeApprovalPending        Code = "approval_pending"
	CodeRequestConflict        Code = "request_conflict"
	CodeDeliveryUnknown        Code = "delivery_unknown"
	CodeNothingToCompact       Code = "nothing_to_compact"
	CodeNotResumable           Code = "not_resumable"
	CodeQueueItemMissing       Code = "queue_item_missing"
	CodeQueueConflict          Code = "queue_conflict"
	CodeFilesConflict          Code = "files_conflict"
	CodeInvalidModelEffort     Code = "invalid_model_effort"
	CodeModelNotFound          Code = "model_not_found"
	CodeNoProvider             Code = "no_provider"
	CodeModelImagesUnsupported Code = "model_images_unsupported"
	CodeInvalidImages          Code = "invalid_images"
	CodeInvalidTextFiles       Code = "invalid_text_files"
	CodeContextBudget          Code = "context_budget"
	CodeBudgetExceeded         Code = "budget_exceeded"
	CodeSessionLocked          Code = "session_locked"
	CodeStorageError           Code = "storage_error"
	CodeModelError             Code = "model_error"
	CodeCancelled              Code = "cancelled"
	CodeConfigError            Code = "config_error"
	CodeInternal               Code = "internal_error"
)

// Error is a failure with a stable code. Cause, when set, is the underlying
// error; Causes holds more than one when a run and its save both failed.
type Error struct {
	Code    Code
	Message string
	Causes  []error
}

func (e *Error) Error() string { return e.Message }

// Unwrap exposes every cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error { return e.Causes }

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func wrapError(code Code, err error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Error{Code: code, Message: msg, Causes: []error{err}}
}

// CodeOf returns the stable code of err: its own for an *Error, the store's
// mapped for store errors, else internal_error.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) {
		return CodeCancelled
	}
	switch {
	case errors.Is(err, store.ErrSessionNotFound), errors.Is(err, store.ErrUnsupportedFormat):
		return CodeSessionNotFound
	case errors.Is(err, store.ErrWorkspaceNotFound):
		return CodeWorkspaceNotFound
	case errors.Is(err, store.ErrSessionLocked), errors.Is(err, store.ErrNotWritable):
		return CodeSessionLocked
	case errors.Is(err, store.ErrInvalid):
		return CodeInvalidParams
	case errors.Is(err, store.ErrMalformed), errors.Is(err, store.ErrCwdMissing):
		return CodeStorageError
	}
	return CodeInternal
}

// storageError classifies a store failure for a caller.
func storageError(err error, what string) error {
	if err == nil {
		return nil
	}
	code := CodeOf(err)
	if code == CodeInternal {
		code = CodeStorageError
	}
	return wrapError(code, err, "%s", what)
}

// readOnlyError is what a write to a session opened read-only answers:
// session_locked, saying whether another process writes it or its files
// cannot be written (docs/storage.md, Lock).
func (s *Session) readOnlyError() *Error {
	switch why := s.st.ReadOnlyReason(); {
	case errors.Is(why, store.ErrNotWritable):
		return wrapError(CodeSessionLocked, why, "session %s is read-only", s.id)
	case errors.Is(why, store.ErrStale):
		return errorf(CodeSessionLocked, "another process changed session %s since this one opened it; it has been opened again with those changes: repeat the request", s.id)
	}
	return errorf(CodeSessionLocked, "another process writes session %s", s.id)
}
