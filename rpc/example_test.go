package rpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc"
)

// A Go program can serve Loop's protocol over any reader and writer, as the
// binary does over stdin and stdout. Serve returns once the input ends and
// every request read was answered.
func ExampleServer_Serve() {
	dir, _ := os.MkdirTemp("", "loop-rpc-example")
	defer os.RemoveAll(dir)
	eng, err := engine.New(engine.Options{DataRoot: dir, Demo: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"loop/1"}}
{"jsonrpc":"2.0","id":2,"method":"model/list"}
`)
	var out bytes.Buffer
	if err := rpc.NewServer(eng, rpc.Options{}).Serve(context.Background(), in, &out); err != nil {
		fmt.Println(err)
		return
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var reply struct {
			ID     int `json:"id"`
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
				Models          []struct {
					Provider string `json:"provider"`
					ID       string `json:"id"`
				} `json:"models"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &reply) != nil {
			continue
		}
		switch reply.ID {
		case 1:
			fmt.Println("protocol", reply.Result.ProtocolVersion)
		case 2:
			for _, m := range reply.Result.Models {
				fmt.Println("model", m.Provider+"/"+m.ID)
			}
		}
	}
	// Output:
	// protocol loop/1
	// model demo/demo
}
