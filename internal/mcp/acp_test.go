package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestFromACP(t *testing.T) {
	raw := []json.RawMessage{
		json.RawMessage(`{"name":"File System","command":"fs-server","args":["--root","."],"env":[{"name":"A","value":"1"}]}`),
		json.RawMessage(`{"type":"http","name":"remote","url":"https://h/mcp","headers":[{"name":"Authorization","value":"Bearer x"}]}`),
		json.RawMessage(`{"type":"sse","name":"old","url":"https://h/sse","headers":[]}`),
		json.RawMessage(`{"name":"File System","command":"other","args":[],"env":[]}`),
		json.RawMessage(`{"name":"__","command":"x","args":[],"env":[]}`),
		json.RawMessage(`{"name":"nocmd","args":[],"env":[]}`),
	}
	got, err := FromACP(raw)
	want := map[string]ServerConfig{
		"File_System":   {Command: "fs-server", Args: []string{"--root", "."}, Env: map[string]string{"A": "1"}},
		"remote":        {URL: "https://h/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
		"File_System-2": {Command: "other", Args: []string{}},
		"server5":       {Command: "x", Args: []string{}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromACP = %#v\nwant %#v", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), `unsupported type "sse"`) || !strings.Contains(err.Error(), `"nocmd"`) {
		t.Errorf("error = %v", err)
	}
	for name := range got {
		if !ValidServerName(name) {
			t.Errorf("invalid name %q", name)
		}
	}
}
