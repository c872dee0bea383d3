package rpctest_test

import (
	"fmt"
	"sort"

	"github.com/loopdev/loop/rpc/rpctest"
)

// A testscript suite registers the rpc command with Cmds and prepares each
// script's environment with Setup (docs/testing.md):
//
//	testscript.Run(t, testscript.Params{Dir: "testdata/script", Cmds: rpctest.Cmds(), Setup: rpctest.Setup})
func ExampleCmds() {
	names := make([]string, 0)
	for name := range rpctest.Cmds() {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Println(names)
	// Output: [rpc]
}
