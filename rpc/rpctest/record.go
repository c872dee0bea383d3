package rpctest

import "github.com/rogpeppe/go-internal/testscript"

// Frame is one message between a script and a server it started, as
// Record hands it on.
type Frame struct {
	// Conn numbers the servers a script started, from 1 in the order of
	// their rpc start; Name is the -name and Args the command line
	// (program and arguments) of that start.
	Conn int
	Name string
	Args []string
	// FromServer says the server wrote it; otherwise the script sent it.
	FromServer bool
	// Raw says the script wrote these bytes by hand (rpc send-raw): they
	// may be anything, malformed on purpose, and are not one message.
	Raw bool
	// Body is the message without its framing (for Raw, the bytes as
	// given).
	Body []byte
}

// Record hands fn every frame between this script and the servers it
// starts from now on: what the script sends (calls, notifications,
// answers to the server's requests, send-raw bytes) when it queues it,
// before the server can answer, and what a server writes as soon as it is
// read, before any answer the script gives it. So a response comes after
// its request. fn may be called from several goroutines at once (one per
// server, and the script's). Call Record from testscript.Params.Setup,
// after Setup; loop's own suite uses it to check every frame of every
// scenario against the protocol's schema (cmd/loop/schema_test.go).
func Record(env *testscript.Env, fn func(Frame)) {
	if st, ok := env.Values[stateKey{}].(*state); ok {
		st.record = fn
	}
}

// recorder is one server's side of Record: nil when nothing records.
type recorder func(fromServer, raw bool, body []byte)

func (r recorder) frame(fromServer, raw bool, body []byte) {
	if r != nil {
		r(fromServer, raw, append([]byte(nil), body...))
	}
}

// recorderFor is the recorder of the server about to start, if any.
func (st *state) recorderFor(name string, args []string) recorder {
	if st.record == nil {
		return nil
	}
	st.conns++
	conn, fn := st.conns, st.record
	args = append([]string(nil), args...)
	return func(fromServer, raw bool, body []byte) {
		fn(Frame{Conn: conn, Name: name, Args: args, FromServer: fromServer, Raw: raw, Body: body})
	}
}
