// Command loop serves Loop's JSON-RPC protocol on stdin and stdout.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "loop: usage: loop [--data-dir DIR]")
	os.Exit(2)
}
