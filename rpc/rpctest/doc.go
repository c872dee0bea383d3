// Package rpctest is a testscript command, rpc, that holds a JSON-RPC
// conversation with a real server binary over its stdin and stdout, so a
// script can drive `loop` the way an editor does: start it, call methods,
// wait for notifications, answer its requests, send malformed bytes, and stop
// it.
//
// Register it in any testscript suite:
//
//	testscript.Run(t, testscript.Params{
//		Dir:   "testdata/script",
//		Cmds:  rpctest.Cmds(),
//		Setup: rpctest.Setup,
//	})
//
// The client is written here rather than taken from jsonrpc2 (which drops
// responses with id null) and reads every frame in order on one goroutine,
// so by the time `rpc call` prints a result, every notification the server
// sent before that result is already in the transcript.
//
// docs/testing.md describes every subcommand with examples.
package rpctest
