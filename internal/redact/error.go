package redact

// Error returns err with s's secrets removed from its text (Text). What it
// wraps is kept for errors.Is and errors.As (a refused connection, a
// cancelled context); only the text is redacted, and the text is all
// that is ever shown.
func (s *Set) Error(err error) error {
	if err == nil || s.Empty() {
		return err
	}
	msg := err.Error()
	red := s.Text(msg)
	if red == msg {
		return err
	}
	return &redacted{msg: red, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
