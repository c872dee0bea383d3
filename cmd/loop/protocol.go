package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/loopdev/loop/rpc"
)

const protocolUsage = `Usage: loop protocol schema|ts

Prints the native protocol (loop/1) for client authors, generated from the
Go types this binary encodes and decodes, so it always matches it:

  schema   one JSON Schema document (draft 2020-12): every method's params
           and result, every notification, the server's request, every
           error's data.code with its JSON-RPC integer code
  ts       the same as TypeScript declarations

docs/protocol.md ("For client authors") describes both.
`

// protocolCommand is loop protocol: the protocol's schema or its
// TypeScript declarations on stdout. Nothing is read and no data root is
// opened.
func protocolCommand(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop protocol", flag.ContinueOnError)
	if code, done := parseFlags(fs, protocolUsage, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "loop protocol: want one of schema and ts (see loop protocol -h)\n")
		return exitUsage
	}
	var (
		out []byte
		err error
	)
	switch fs.Arg(0) {
	case "schema":
		out, err = rpc.ProtocolSchema()
	case "ts":
		out, err = rpc.ProtocolTypeScript()
	default:
		fmt.Fprintf(stderr, "loop protocol: no output %q: want schema or ts (see loop protocol -h)\n", fs.Arg(0))
		return exitUsage
	}
	if err != nil {
		// The types cannot be described: a bug of this binary.
		fmt.Fprintf(stderr, "loop protocol %s: %v\n", fs.Arg(0), err)
		return 1
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "loop protocol %s: %v\n", fs.Arg(0), err)
		return 1
	}
	return 0
}
