package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
)

// ServerConfig is one entry of config.json "mcpServers" (global) or of a
// workspace's "mcpServers". Exactly one of Command (a stdio server) and URL
// (a streamable HTTP server) is set, unless the entry only disables a server
// of the same name from a wider scope.
type ServerConfig struct {
	// stdio
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	// Sandbox false runs the server without the OS sandbox of the
	// session that started it (docs/mcp.md); unset or true keeps it.
	Sandbox *bool `json:"sandbox,omitempty"`

	// streamable HTTP
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`

	Disabled bool `json:"disabled,omitempty"`
}

// Transport names, as ServerStatus.Transport reports them.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Transport returns "stdio" or "http", or "" for a bare disabling entry.
func (c ServerConfig) Transport() string {
	switch {
	case c.Command != "":
		return TransportStdio
	case c.URL != "":
		return TransportHTTP
	}
	return ""
}

// serverConfigFile is the accepted file shape: ServerConfig plus the "type"
// key other MCP clients write, so their configs can be pasted unchanged.
type serverConfigFile struct {
	ServerConfig
	Type string `json:"type,omitempty"`
}

// maxServerNameLen keeps "mcp__<server>__" well inside the providers'
// 64-character tool names, leaving room for the tool.
const maxServerNameLen = 32

// ValidServerName reports whether name may name a server: letters, digits,
// '_' and '-', at most 32 of them. "__" is refused: it separates the server
// from the tool in namespaced names, and a name holding it would make two
// servers' tools collide ("a__b"+"c" and "a"+"b__c").
func ValidServerName(name string) bool {
	if name == "" || len(name) > maxServerNameLen || strings.Contains(name, "__") {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ParseServers decodes and validates an "mcpServers" object. It returns every
// valid entry, and an error naming each invalid one (entries in name order),
// so a caller can start the good servers and report the bad ones.
// Unknown keys inside an entry are ignored.
func ParseServers(raw map[string]json.RawMessage) (map[string]ServerConfig, error) {
	names := make([]string, 0, len(raw))
	for name := range raw {
		names = append(names, name)
	}
	sort.Strings(names)

	servers := make(map[string]ServerConfig, len(raw))
	var errs []error
	for _, name := range names {
		cfg, err := parseServer(name, raw[name])
		if err != nil {
			errs = append(errs, fmt.Errorf("mcpServers %q: %w", name, err))
			continue
		}
		servers[name] = cfg
	}
	return servers, errors.Join(errs...)
}

func parseServer(name string, raw json.RawMessage) (ServerConfig, error) {
	if !ValidServerName(name) {
		return ServerConfig{}, errors.New("invalid name: use up to 32 letters, digits, '_' and '-' (no \"__\")")
	}
	var f serverConfigFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return ServerConfig{}, fmt.Errorf("decoding: %w", err)
	}
	if f.ServerConfig.Transport() == "" && f.Disabled && f.Type == "" {
		return f.ServerConfig, nil // only switches off a server of the same name
	}
	if err := f.validate(); err != nil {
		return ServerConfig{}, err
	}
	return f.ServerConfig, nil
}

// checkServer applies ParseServers' rules to an already decoded entry.
func checkServer(name string, c ServerConfig) error {
	if !ValidServerName(name) {
		return fmt.Errorf("invalid server name %q", name)
	}
	return (&serverConfigFile{ServerConfig: c}).validate()
}

func (f *serverConfigFile) validate() error {
	c := &f.ServerConfig
	switch {
	case c.Command != "" && c.URL != "":
		return errors.New("set either command (stdio) or url (HTTP), not both")
	case c.Command == "" && c.URL == "":
		return errors.New("set command (stdio) or url (HTTP)")
	}
	switch f.Type {
	case "":
	case "stdio":
		if c.Command == "" {
			return errors.New(`type "stdio" needs command`)
		}
	case "http", "streamable-http", "streamableHttp":
		if c.URL == "" {
			return fmt.Errorf("type %q needs url", f.Type)
		}
	default:
		return fmt.Errorf("unsupported type %q (stdio and streamable HTTP are supported)", f.Type)
	}
	if c.Command != "" && len(c.Headers) > 0 {
		return errors.New("headers apply to url servers only")
	}
	if c.URL != "" {
		if len(c.Args) > 0 || len(c.Env) > 0 || c.Cwd != "" {
			return errors.New("args, env and cwd apply to command servers only")
		}
		u, err := url.Parse(c.URL)
		if err != nil {
			return fmt.Errorf("url: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q: want an absolute http or https URL", c.URL)
		}
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("env: invalid variable name %q", k)
		}
	}
	return nil
}

// Merge overlays a workspace's servers on the global ones: a workspace entry
// replaces the global entry of the same name, and a workspace entry that only
// says {"disabled": true} switches the global one off. Bare disabling entries
// without a global counterpart are dropped.
func Merge(global, workspace map[string]ServerConfig) map[string]ServerConfig {
	out := make(map[string]ServerConfig, len(global)+len(workspace))
	for name, c := range global {
		if c.Transport() != "" {
			out[name] = c
		}
	}
	for name, c := range workspace {
		if c.Transport() == "" {
			if g, ok := out[name]; ok && c.Disabled {
				g.Disabled = true
				out[name] = g
			}
			continue
		}
		out[name] = c
	}
	return out
}

// expandEnv replaces ${NAME} with the variable's value in the process
// environment, so secrets can stay out of config.json. Only the braced form
// is expanded: a lone '$' (common in tokens and shell snippets) is kept.
func expandEnv(s string) string { return expandWith(s, os.Getenv) }

// expandWith is expandEnv reading variables through getenv.
func expandWith(s string, getenv func(string) string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+2:], '}')
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteString(getenv(s[i+2 : i+2+j]))
		s = s[i+2+j+1:]
	}
	b.WriteString(s)
	return b.String()
}

// Variables names the environment variables c's env and headers values
// expand (${NAME}): what a server's secrets are read from, so that the
// engine can keep their values out of logs, errors and traces.
func (c ServerConfig) Variables() []string {
	var names []string
	add := func(n string) string {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
		return ""
	}
	for _, v := range c.Env {
		expandWith(v, add)
	}
	for _, v := range c.Headers {
		expandWith(v, add)
	}
	return names
}

// ExpandedHeaders returns c's headers as they are sent, with ${NAME}
// read through getenv.
func (c ServerConfig) ExpandedHeaders(getenv func(string) string) map[string]string {
	h := make(map[string]string, len(c.Headers))
	for k, v := range c.Headers {
		h[k] = expandWith(v, getenv)
	}
	return h
}
