// Command mcpserver is the stdio MCP server the internal/mcp tests build and
// run. Its tools: echo (harmless), write_file (writes under its cwd), fail
// (a tool-level error), crash (exits mid-call), sleep (waits for
// cancellation), info (pid, cwd, env), image, add_tool (announces a tool
// list change) and spawn (starts a child that outlives nothing).
//
// Environment:
//
//	MCPTEST_EXIT_AT_START=N  print to stderr and exit with status N at once
//	MCPTEST_STUBBORN=1       ignore SIGTERM and keep running after stdin ends
//	MCPTEST_CHILD=1          be the child of spawn: sleep until killed
//	MCPTEST_HANG=1           never answer (and ignore the end of stdin)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type writeIn struct {
	Path    string `json:"path" jsonschema:"file path, relative to the server's working directory"`
	Content string `json:"content"`
}

type failIn struct {
	Message string `json:"message"`
}

type sleepIn struct {
	Ms int `json:"ms"`
	// Started, when set, is a file created once the sleep has begun, so
	// that a test can act on a call known to be in flight.
	Started string `json:"started,omitempty"`
}

type addIn struct {
	Name string `json:"name"`
}

type none struct{}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// onePixelPNG is a valid 1x1 PNG.
var onePixelPNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

func main() {
	if os.Getenv("MCPTEST_CHILD") == "1" || os.Getenv("MCPTEST_HANG") == "1" {
		time.Sleep(time.Hour)
		return
	}
	if v := os.Getenv("MCPTEST_EXIT_AT_START"); v != "" {
		code, _ := strconv.Atoi(v)
		fmt.Fprintln(os.Stderr, "mcpserver: refusing to start on purpose")
		os.Exit(code)
	}
	stubborn := os.Getenv("MCPTEST_STUBBORN") == "1"
	if stubborn {
		signal.Ignore(syscall.SIGTERM)
	}

	server := mcp.NewServer(&mcp.Implementation{Name: "mcpserver", Version: "1"}, nil)

	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})

	mcp.AddTool(server, &mcp.Tool{Name: "write_file", Description: "Write content to a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, any, error) {
			if err := os.WriteFile(in.Path, []byte(in.Content), 0o644); err != nil {
				return nil, nil, err
			}
			abs, _ := filepath.Abs(in.Path)
			return text(fmt.Sprintf("wrote %d bytes to %s", len(in.Content), abs)), nil, nil
		})

	mcp.AddTool(server, &mcp.Tool{Name: "fail", Description: "Fail with the message."},
		func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New(in.Message)
		})

	mcp.AddTool(server, &mcp.Tool{Name: "crash", Description: "Exit the server mid-call."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "mcpserver: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})

	mcp.AddTool(server, &mcp.Tool{Name: "sleep", Description: "Sleep for ms or until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			if in.Started != "" {
				if err := os.WriteFile(in.Started, nil, 0o600); err != nil {
					return nil, nil, err
				}
			}
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
				return text("slept"), nil, nil
			case <-ctx.Done():
				fmt.Fprintln(os.Stderr, "mcpserver: sleep cancelled")
				return nil, nil, ctx.Err()
			}
		})

	mcp.AddTool(server, &mcp.Tool{Name: "info", Description: "Report pid, cwd and MCPTEST_VALUE."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			data, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "cwd": wd, "value": os.Getenv("MCPTEST_VALUE")})
			return text(string(data)), nil, nil
		})

	mcp.AddTool(server, &mcp.Tool{Name: "image", Description: "Return a 1x1 PNG."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a pixel"},
				&mcp.ImageContent{Data: onePixelPNG, MIMEType: "image/png"},
			}}, nil, nil
		})

	mcp.AddTool(server, &mcp.Tool{Name: "add_tool", Description: "Add an echo-like tool under name."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			name := in.Name
			mcp.AddTool(server, &mcp.Tool{Name: name, Description: "Added at run time."},
				func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
					return text("I am " + name), nil, nil
				})
			return text("added " + name), nil, nil
		})

	mcp.AddTool(server, &mcp.Tool{Name: "spawn", Description: "Start a child process; report its pid."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			self, err := os.Executable()
			if err != nil {
				return nil, nil, err
			}
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), "MCPTEST_CHILD=1")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			go cmd.Wait()
			return text(strconv.Itoa(cmd.Process.Pid)), nil, nil
		})

	err := server.Run(context.Background(), &mcp.StdioTransport{})
	if stubborn {
		for { // outlive stdin; only SIGKILL ends this
			time.Sleep(time.Hour)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}
