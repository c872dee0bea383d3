package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// acpServer is an MCP server as an ACP client names it in session/new and
// session/load: stdio entries have no type; others say "http", "sse", ...
type acpServer struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
	URL     string `json:"url"`
	Headers []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"headers"`
}

// FromACP converts the mcpServers an ACP client sent into ServerConfigs.
// ACP names are free text: they are made valid server names (other
// characters become '_', cut to 32, numbered when two collide). Entries of
// unsupported transports (sse) are skipped and reported in the error, like
// ParseServers does with invalid entries.
func FromACP(raw []json.RawMessage) (map[string]ServerConfig, error) {
	out := make(map[string]ServerConfig, len(raw))
	var errs []error
	for i, r := range raw {
		var s acpServer
		if err := json.Unmarshal(r, &s); err != nil {
			errs = append(errs, fmt.Errorf("mcpServers[%d]: %w", i, err))
			continue
		}
		var cfg ServerConfig
		switch s.Type {
		case "", "stdio":
			cfg = ServerConfig{Command: s.Command, Args: s.Args}
			if len(s.Env) > 0 {
				cfg.Env = make(map[string]string, len(s.Env))
				for _, e := range s.Env {
					cfg.Env[e.Name] = e.Value
				}
			}
		case "http":
			cfg = ServerConfig{URL: s.URL}
			if len(s.Headers) > 0 {
				cfg.Headers = make(map[string]string, len(s.Headers))
				for _, h := range s.Headers {
					cfg.Headers[h.Name] = h.Value
				}
			}
		default:
			errs = append(errs, fmt.Errorf("mcpServers[%d] %q: unsupported type %q", i, s.Name, s.Type))
			continue
		}
		name := acpName(s.Name, i, out)
		if err := checkServer(name, cfg); err != nil {
			errs = append(errs, fmt.Errorf("mcpServers[%d] %q: %w", i, s.Name, err))
			continue
		}
		out[name] = cfg
	}
	return out, errors.Join(errs...)
}

func acpName(name string, i int, taken map[string]ServerConfig) string {
	n := sanitize(strings.TrimSpace(name))
	for strings.Contains(n, "__") {
		n = strings.ReplaceAll(n, "__", "_")
	}
	n = strings.Trim(n, "_")
	if n == "" {
		n = "server" + strconv.Itoa(i+1)
	}
	if len(n) > maxServerNameLen {
		n = n[:maxServerNameLen]
	}
	base := n
	for k := 2; ; k++ {
		if _, dup := taken[n]; !dup {
			return n
		}
		suffix := "-" + strconv.Itoa(k)
		n = base[:min(len(base), maxServerNameLen-len(suffix))] + suffix
	}
}
