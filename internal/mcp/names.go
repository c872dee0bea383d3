package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// namePrefix starts every namespaced MCP tool name.
const namePrefix = "mcp__"

// maxToolNameLen is the longest tool name the providers accept
// (OpenAI and Anthropic both allow ^[a-zA-Z0-9_-]{1,64}$).
const maxToolNameLen = 64

// IsMCPTool reports whether name is a namespaced MCP tool name.
func IsMCPTool(name string) bool {
	_, ok := ServerOf(name)
	return ok
}

// ServerOf returns the server part of a namespaced tool name. Server names
// never hold "__", so the first "__" after the prefix ends the server.
func ServerOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return "", false
	}
	server, tool, ok := strings.Cut(rest, "__")
	if !ok || server == "" || tool == "" {
		return "", false
	}
	return server, true
}

// ToolName returns the name the model sees for tool of server:
// "mcp__<server>__<tool>", with characters the providers refuse replaced
// by '_' and overlong names cut and suffixed with a hash of the original.
func ToolName(server, tool string) string {
	if name := sanitize(namePrefix + server + "__" + tool); len(name) <= maxToolNameLen {
		return name
	}
	return hashedToolName(server, tool)
}

// hashedToolName is the sanitized name cut to leave room for "_" and eight
// hex digits of the original's hash. Server names are short enough
// (maxServerNameLen) that the cut never reaches the server part.
func hashedToolName(server, tool string) string {
	full := namePrefix + server + "__" + tool
	name := sanitize(full)
	if len(name) > maxToolNameLen-9 {
		name = name[:maxToolNameLen-9]
	}
	return name + "_" + shortHash(full)
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
