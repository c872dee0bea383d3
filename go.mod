module github.com/loopdev/loop

go 1.26.8

require (
	github.com/coder/acp-go-sdk v0.13.0
	github.com/creack/pty v1.1.24
	github.com/dlclark/regexp2/v2 v2.5.1
	github.com/google/jsonschema-go v0.4.3
	github.com/google/uuid v1.6.0
	github.com/landlock-lsm/go-landlock v0.11.2
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/rogpeppe/go-internal v1.16.0
	github.com/sourcegraph/jsonrpc2 v0.2.3
	github.com/tiktoken-go/tokenizer v0.10.0
	golang.org/x/mod v0.33.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.40.0
	golang.org/x/text v0.34.0
)

require (
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	golang.org/x/tools v0.42.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
)
