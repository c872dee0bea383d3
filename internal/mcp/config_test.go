package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestParseServers(t *testing.T) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{
		"files":  {"command": "npx", "args": ["-y", "server-files"], "env": {"A": "1"}, "cwd": "tools"},
		"remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"typed":  {"type": "stdio", "command": "srv", "alwaysAllow": []},
		"typedh": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
		"off":    {"disabled": true},
		"both":   {"command": "x", "url": "http://h/"},
		"none":   {"args": ["x"]},
		"bad name": {"command": "x"},
		"a__b":   {"command": "x"},
		"sse":    {"type": "sse", "url": "http://h/sse"},
		"hdr":    {"command": "x", "headers": {"A": "b"}},
		"relurl": {"url": "/mcp"},
		"ftp":    {"url": "ftp://h/"},
		"envkey": {"command": "x", "env": {"A=B": "c"}},
		"argsurl": {"url": "http://h/", "args": ["x"]},
		"notjson": [1]
	}`), &raw); err != nil {
		t.Fatal(err)
	}
	servers, err := ParseServers(raw)
	want := map[string]ServerConfig{
		"files":  {Command: "npx", Args: []string{"-y", "server-files"}, Env: map[string]string{"A": "1"}, Cwd: "tools"},
		"remote": {URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
		"typed":  {Command: "srv"},
		"typedh": {URL: "http://127.0.0.1:9/mcp"},
		"off":    {Disabled: true},
	}
	if !reflect.DeepEqual(servers, want) {
		t.Errorf("servers = %+v\nwant %+v", servers, want)
	}
	if err == nil {
		t.Fatal("no error for the invalid entries")
	}
	for _, name := range []string{"both", "none", "bad name", "a__b", "sse", "hdr", "relurl", "ftp", "envkey", "argsurl", "notjson"} {
		if !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("error does not name %q:\n%v", name, err)
		}
	}
	for _, valid := range []string{"files", "remote", "typed", "typedh", "off"} {
		if strings.Contains(err.Error(), `"`+valid+`"`) {
			t.Errorf("error names valid entry %q:\n%v", valid, err)
		}
	}
	if got := ServerConfig(want["files"]).Transport(); got != TransportStdio {
		t.Errorf("transport = %q", got)
	}
}

func TestValidServerName(t *testing.T) {
	for name, ok := range map[string]bool{
		"github": true, "my-server_2": true, "A": true,
		"": false, "a b": false, "a.b": false, "a__b": false, "é": false,
		strings.Repeat("x", 32): true, strings.Repeat("x", 33): false,
	} {
		if ValidServerName(name) != ok {
			t.Errorf("ValidServerName(%q) = %v", name, !ok)
		}
	}
}

func TestMerge(t *testing.T) {
	global := map[string]ServerConfig{
		"a": {Command: "ga"},
		"b": {Command: "gb"},
		"c": {URL: "http://h/"},
	}
	workspace := map[string]ServerConfig{
		"a": {Command: "wa"},  // replaces
		"b": {Disabled: true}, // switches off
		"d": {Command: "wd"},  // adds
		"e": {Disabled: true}, // nothing to switch off
	}
	got := Merge(global, workspace)
	want := map[string]ServerConfig{
		"a": {Command: "wa"},
		"b": {Command: "gb", Disabled: true},
		"c": {URL: "http://h/"},
		"d": {Command: "wd"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %+v\nwant %+v", got, want)
	}
	if global["b"].Disabled {
		t.Error("Merge changed its input")
	}
}

func TestExpandEnv(t *testing.T) {
	t.Setenv("MCPTEST_X", "ex")
	for in, want := range map[string]string{
		"plain":                    "plain",
		"Bearer ${MCPTEST_X}":      "Bearer ex",
		"${MCPTEST_X}${MCPTEST_X}": "exex",
		"$MCPTEST_X":               "$MCPTEST_X",
		"a$b":                      "a$b",
		"${MCPTEST_UNSET_Y}!":      "!",
		"${unterminated":           "${unterminated",
	} {
		if got := expandEnv(in); got != want {
			t.Errorf("expandEnv(%q) = %q, want %q", in, got, want)
		}
	}
}
