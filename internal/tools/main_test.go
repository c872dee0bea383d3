package tools

import (
	"os"
	"testing"

	"github.com/loopdev/loop/internal/sandbox"
)

// TestMain lets the test binary be the sandbox helper, as the loop binary
// is (cmd/loop/main.go), for commands an editor's terminal runs.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperArg {
		os.Exit(sandbox.RunHelper(os.Args[2:]))
	}
	os.Exit(m.Run())
}
