package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/regfile"
	"github.com/loopdev/loop/store"
)

// Config is the shape of config.json in the data root (docs/configuration.md;
// keys may be added, never renamed).
type Config struct {
	Providers  []ProviderConfig           `json:"-"` // in file order: "first configured model" means the first here
	Defaults   Defaults                   `json:"defaults"`
	MCPServers map[string]json.RawMessage `json:"mcpServers,omitempty"`
	Compaction CompactionConfig           `json:"compaction"`
	ToolOutput ToolOutputConfig           `json:"toolOutput"`
	Titles     TitleConfig                `json:"titles"`
	Traces     TracesConfig               `json:"traces"`
	// Checkpoints bounds the file checkpoints (docs/configuration.md).
	Checkpoints CheckpointsConfig `json:"checkpoints"`
	// Sandbox widens the OS sandbox of bash commands and MCP stdio
	// servers (docs/configuration.md, "The sandbox").
	Sandbox SandboxConfig `json:"sandbox"`
	// Workspaces holds per-workspace settings keyed by the workspace's
	// directory (for now its mcpServers, merged over the global ones).
	// Keys may name environment variables ($VAR, ${VAR}).
	Workspaces map[string]WorkspaceConfig `json:"workspaces,omitempty"`
	Extra      map[string]json.RawMessage `json:"-"`
}

// ProviderConfig is one entry of config.json's providers object.
type ProviderConfig struct {
	Name      string            `json:"-"`
	API       string            `json:"api"` // openai, openai-responses, anthropic or scripted (provider.Lookup)
	BaseURL   string            `json:"baseUrl,omitempty"`
	APIKeyEnv string            `json:"apiKeyEnv,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Models    []ModelConfig     `json:"models"`
	// Script is the scripted provider's script file, relative to the data root.
	Script string `json:"script,omitempty"`
	// Retry tunes retries of transient failures before the first byte.
	Retry *RetryConfig `json:"retry,omitempty"`
	// Titles turns background titles on or off for this provider
	// (default: on, except for scripted providers).
	Titles *bool `json:"titles,omitempty"`
}

// ModelConfig describes one model of a provider.
type ModelConfig struct {
	ID              string   `json:"id"`
	Name            string   `json:"name,omitempty"`
	ContextWindow   int      `json:"contextWindow,omitempty"`
	MaxOutputTokens int      `json:"maxOutputTokens,omitempty"`
	Images          bool     `json:"images,omitempty"`
	Efforts         []string `json:"efforts,omitempty"`
	// Cost is the model's prices; without them calls have no cost
	// (docs/configuration.md, "Prices and budgets").
	Cost *Prices `json:"cost,omitempty"`
}

// Prices are a model's prices in currency units per million tokens
// (config.json models[].cost).
type Prices struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// BudgetConfig is config.json's defaults.budget: the limits new sessions
// start with (docs/configuration.md, "Prices and budgets").
type BudgetConfig struct {
	SessionTokens *int     `json:"sessionTokens,omitempty"`
	SessionCost   *float64 `json:"sessionCost,omitempty"`
	PromptTokens  *int     `json:"promptTokens,omitempty"`
	PromptCost    *float64 `json:"promptCost,omitempty"`
}

// Budget is the store's form of the limits.
func (b *BudgetConfig) Budget() store.Budget {
	if b == nil {
		return store.Budget{}
	}
	return store.Budget{SessionTokens: store.OptOf(b.SessionTokens), SessionCost: store.OptOf(b.SessionCost),
		PromptTokens: store.OptOf(b.PromptTokens), PromptCost: store.OptOf(b.PromptCost)}
}

// Defaults are the settings new sessions start from.
type Defaults struct {
	Model      *ModelChoice  `json:"model,omitempty"`
	Effort     string        `json:"effort,omitempty"`
	Permission string        `json:"permission,omitempty"`
	Budget     *BudgetConfig `json:"budget,omitempty"`
}

// CompactionConfig tunes automatic compaction.
type CompactionConfig struct {
	Enabled       *bool `json:"enabled,omitempty"`
	ReserveTokens int   `json:"reserveTokens,omitempty"`
}

// ToolOutputConfig bounds the tool output the model gets
// (docs/configuration.md, "toolOutput").
type ToolOutputConfig struct {
	// MaxBytes: a longer output goes to the model as its start and its
	// end (0: turn.DefaultToolOutputMax; below 0: whole).
	MaxBytes int `json:"maxBytes,omitempty"`
}

// RetryConfig is a provider's retry policy: attempts in all (1: no
// retry) and the first backoff delay, doubled after each attempt.
type RetryConfig struct {
	Attempts    int `json:"attempts,omitempty"`
	BaseDelayMs int `json:"baseDelayMs,omitempty"`
}

// SandboxConfig is config.json's sandbox object: what the OS sandbox of
// the read-only, workspace-write and ask presets allows beyond their
// defaults. Paths may start with ~ and name environment variables ($VAR,
// ${VAR}); relative ones are relative to the session's working directory.
type SandboxConfig struct {
	// Network allows TCP connect and bind.
	Network bool `json:"network,omitempty"`
	// Writable are more paths commands may write (workspace-write, ask).
	Writable []string `json:"writable,omitempty"`
	// Deny are more paths commands may not read, beside the key stores.
	Deny []string `json:"deny,omitempty"`
}

// WorkspaceConfig is config.json's entry for one workspace directory.
type WorkspaceConfig struct {
	MCPServers map[string]json.RawMessage `json:"mcpServers,omitempty"`
}

// workspaceConfig finds the entry for cwd, comparing canonical paths.
func (c *Config) workspaceConfig(cwd string, getenv func(string) string) (WorkspaceConfig, bool) {
	for dir, wc := range c.Workspaces {
		if canonicalDir(expandEnv(dir, getenv)) == cwd {
			return wc, true
		}
	}
	return WorkspaceConfig{}, false
}

func canonicalDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}

// ModelChoice is a model as Loop's own files name it, config.json's
// defaults.model and preferences.json's model: {"provider", "id"}
// (docs/configuration.md). ModelRef, the engine's value, has no JSON
// member names of its own.
type ModelChoice struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
}

// Ref is the model the choice names.
func (c ModelChoice) Ref() ModelRef { return ModelRef(c) }

// ModelRef names a model: its provider and id. It is the store's, so a
// session header's model is one without conversions.
type ModelRef = store.ModelRef

// Default sizes for models whose config leaves them out.
const (
	defaultContextWindow   = 128000
	defaultMaxOutputTokens = 16384
)

// MaxConfigBytes bounds config.json: far above any hand-written
// configuration, far below what would exhaust memory.
const MaxConfigBytes = 64 << 20

// LoadConfig reads path. A missing file is an empty config, not an error:
// environment keys alone can configure the usual providers.
func LoadConfig(path string) (*Config, error) {
	// Only a regular file of bounded size: a FIFO would block the read,
	// and with it the engine's start, forever (docs/configuration.md).
	data, err := regfile.Read(path, MaxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses config.json's bytes, keeping the providers' file order.
func ParseConfig(data []byte) (*Config, error) {
	cfg := &Config{}
	if len(bytes.TrimSpace(data)) == 0 {
		return cfg, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("config is not a JSON object: %w", err)
	}
	if err := json.Unmarshal(data, cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if b := cfg.Defaults.Budget.Budget(); b.Validate() != nil {
		return nil, fmt.Errorf("config defaults: %w", b.Validate())
	}
	if raw, ok := top["providers"]; ok {
		names, err := objectKeys(raw)
		if err != nil {
			return nil, fmt.Errorf("config providers: %w", err)
		}
		var byName map[string]ProviderConfig
		if err := json.Unmarshal(raw, &byName); err != nil {
			return nil, fmt.Errorf("config providers: %w", err)
		}
		for _, name := range names {
			p := byName[name]
			p.Name = name
			if err := p.validate(); err != nil {
				return nil, fmt.Errorf("config provider %q: %w", name, err)
			}
			cfg.Providers = append(cfg.Providers, p)
		}
	}
	return cfg, nil
}

func (p *ProviderConfig) validate() error {
	if err := provider.CheckConfig(provider.Config{Name: p.Name, API: p.API, Script: p.Script}); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, m := range p.Models {
		if m.ID == "" {
			return fmt.Errorf("model %d has no id", i)
		}
		if seen[m.ID] {
			return fmt.Errorf("model %q listed twice", m.ID)
		}
		seen[m.ID] = true
		if c := m.Cost; c != nil && (c.Input < 0 || c.Output < 0 || c.CacheRead < 0 || c.CacheWrite < 0) {
			return fmt.Errorf("model %q: cost: prices must be non-negative numbers", m.ID)
		}
		for _, e := range m.Efforts {
			if !slices.Contains(Efforts, e) || e == EffortDefault {
				return fmt.Errorf("model %q: unknown effort %q", m.ID, e)
			}
		}
	}
	return nil
}

// objectKeys returns the keys of a JSON object in file order.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not an object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// withEnvProviders adds the usual provider for OPENAI_API_KEY or
// ANTHROPIC_API_KEY when the config does not name that provider itself;
// OPENAI_BASE_URL and ANTHROPIC_BASE_URL, when set, replace its base URL,
// as the official SDKs read them (a gateway, a local server).
func (c *Config) withEnvProviders(getenv func(string) string) {
	has := func(name string) bool {
		return slices.ContainsFunc(c.Providers, func(p ProviderConfig) bool { return p.Name == name })
	}
	base := func(env, def string) string {
		if v := strings.TrimRight(strings.TrimSpace(getenv(env)), "/"); v != "" {
			return v
		}
		return def
	}
	if getenv("OPENAI_API_KEY") != "" && !has("openai") {
		c.Providers = append(c.Providers, ProviderConfig{
			Name: "openai", API: "openai", BaseURL: base("OPENAI_BASE_URL", "https://api.openai.com/v1"), APIKeyEnv: "OPENAI_API_KEY",
			Models: []ModelConfig{
				{ID: "gpt-5", Name: "GPT-5", ContextWindow: 400000, MaxOutputTokens: 128000, Images: true, Efforts: []string{"minimal", "low", "medium", "high"}},
				{ID: "gpt-5-mini", Name: "GPT-5 mini", ContextWindow: 400000, MaxOutputTokens: 128000, Images: true, Efforts: []string{"minimal", "low", "medium", "high"}},
			},
		})
	}
	if getenv("ANTHROPIC_API_KEY") != "" && !has("anthropic") {
		c.Providers = append(c.Providers, ProviderConfig{
			Name: "anthropic", API: "anthropic", BaseURL: base("ANTHROPIC_BASE_URL", "https://api.anthropic.com"), APIKeyEnv: "ANTHROPIC_API_KEY",
			Models: []ModelConfig{
				{ID: "claude-sonnet-4-5", Name: "Claude Sonnet 4.5", ContextWindow: 200000, MaxOutputTokens: 64000, Images: true, Efforts: []string{"off", "low", "medium", "high", "max"}},
				{ID: "claude-opus-4-1", Name: "Claude Opus 4.1", ContextWindow: 200000, MaxOutputTokens: 32000, Images: true, Efforts: []string{"off", "low", "medium", "high", "max"}},
			},
		})
	}
}
