package mcp

import (
	"strings"
	"testing"
)

func TestToolName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"fs", "read.file/v2", "mcp__fs__read_file_v2"},
		{"x", "with space", "mcp__x__with_space"},
	} {
		if got := ToolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}

	long := strings.Repeat("t", 100)
	a, b := ToolName("srv", long), ToolName("srv", long+"x")
	if len(a) != maxToolNameLen || len(b) != maxToolNameLen || a == b {
		t.Errorf("long names %q, %q: want distinct, %d long", a, b, maxToolNameLen)
	}
	if s, ok := ServerOf(a); !ok || s != "srv" {
		t.Errorf("ServerOf(%q) = %q, %v", a, s, ok)
	}
	if h := hashedToolName("fs", "read.file"); h == ToolName("fs", "read_file") || !strings.HasPrefix(h, "mcp__fs__read_file_") {
		t.Errorf("hashed name %q", h)
	}
	maxServer := strings.Repeat("s", maxServerNameLen)
	if s, ok := ServerOf(ToolName(maxServer, long)); !ok || s != maxServer {
		t.Errorf("longest server name lost in a hashed tool name: %q", s)
	}
}

func TestIsMCPTool(t *testing.T) {
	for name, want := range map[string]bool{
		"mcp__github__create_issue": true,
		"mcp__a__b__c":              true, // tool "b__c" of server "a"
		"mcp__github__":             false,
		"mcp____tool":               false,
		"mcp__github":               false,
		"mcp_fetch":                 false,
		"read":                      false,
		"":                          false,
	} {
		if got := IsMCPTool(name); got != want {
			t.Errorf("IsMCPTool(%q) = %v", name, got)
		}
	}
	if s, _ := ServerOf("mcp__a__b__c"); s != "a" {
		t.Errorf("ServerOf = %q", s)
	}
}
