package engine

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/loopdev/loop/internal/provider"
	"github.com/loopdev/loop/internal/redact"
	"github.com/loopdev/loop/store"
)

// Effort levels (docs/protocol.md `session/set_model`).
const (
	EffortDefault = provider.EffortDefault
	EffortOff     = provider.EffortOff
)

// Efforts lists every effort value in order of strength: the list the
// providers map onto their APIs (provider.Efforts), which is written once.
var Efforts = provider.Efforts()

// Model is a configured model, as model/list shows it.
type Model struct {
	Provider        string
	ID              string
	Name            string
	ContextWindow   int
	MaxOutputTokens int
	Images          bool
	Efforts         []string
	API             string
	// Cost is the model's prices; nil when config.json has none.
	Cost *Prices
	// MissingKey names the environment variable the provider's apiKeyEnv
	// names when it is empty: requests would go without a key (loop
	// models says so). "" when the provider needs none or has it.
	MissingKey string
}

// Ref returns the model's identity.
func (m Model) Ref() ModelRef { return ModelRef{Provider: m.Provider, ID: m.ID} }

// supportsEffort reports whether effort may be selected for m: default
// always, anything else only when the model lists it.
func (m Model) supportsEffort(effort string) bool {
	return effort == EffortDefault || slices.Contains(m.Efforts, effort)
}

// catalog is one immutable generation of the configured models and their
// provider clients. config/reload swaps the whole catalog.
type catalog struct {
	models    []Model
	providers map[string]provider.Provider
	config    *Config
	// keyVars are the environment variables that hold provider keys; tool
	// processes do not inherit them.
	keyVars []string
	// secrets are what no trace line, model error or log record may hold
	// (configSecrets), given to every provider and trace.
	secrets *redact.Set
	// requestConfig is what of config shapes requests, as traces record
	// it (requestConfig in trace.go).
	requestConfig []byte
}

func (c *catalog) find(ref ModelRef) (Model, bool) {
	for _, m := range c.models {
		if m.Provider == ref.Provider && m.ID == ref.ID {
			return m, true
		}
	}
	return Model{}, false
}

// buildCatalog turns a config into models and clients. Keys are read from
// the environment here and live only inside the clients.
func buildCatalog(cfg *Config, opts Options, layout store.Layout) (*catalog, error) {
	getenv, client := opts.Getenv, opts.HTTPClient
	cfg.withEnvProviders(getenv)
	c := &catalog{providers: map[string]provider.Provider{}, config: cfg, keyVars: keyVariables(cfg)}
	c.secrets = redact.New(configSecrets(cfg, c.keyVars, getenv)...)
	if opts.Demo {
		c.providers["demo"] = provider.Demo()
		c.models = append(c.models, Model{
			Provider: "demo", ID: "demo", Name: "Loop demo (offline, canned answers)", API: "scripted",
			ContextWindow: defaultContextWindow, MaxOutputTokens: defaultMaxOutputTokens, Efforts: []string{},
		})
	}
	for _, pc := range cfg.Providers {
		p, err := provider.New(providerConfig(&pc, getenv, c.secrets, client, layout))
		if err != nil {
			return nil, err
		}
		c.providers[pc.Name] = p
		for _, mc := range pc.Models {
			m := Model{
				Provider: pc.Name, ID: mc.ID, Name: mc.Name, API: pc.API,
				ContextWindow: mc.ContextWindow, MaxOutputTokens: mc.MaxOutputTokens,
				Images: mc.Images, Efforts: slices.Clone(mc.Efforts), Cost: clonePtr(mc.Cost),
			}
			if pc.APIKeyEnv != "" && getenv(pc.APIKeyEnv) == "" {
				m.MissingKey = pc.APIKeyEnv
			}
			if m.Name == "" {
				m.Name = mc.ID
			}
			if m.ContextWindow <= 0 {
				m.ContextWindow = defaultContextWindow
			}
			if m.MaxOutputTokens <= 0 {
				m.MaxOutputTokens = defaultMaxOutputTokens
			}
			if m.Efforts == nil {
				m.Efforts = []string{}
			}
			c.models = append(c.models, m)
		}
	}
	c.requestConfig = requestConfig(cfg, c.models, !opts.NoBackgroundTitles)
	return c, nil
}

// providerConfig is what the provider registry builds a client from: the
// key read from the environment, the environment variables baseUrl and
// header values name expanded (config.json never has to hold a secret),
// and the script resolved against the data root.
func providerConfig(pc *ProviderConfig, getenv func(string) string, secrets *redact.Set, client *http.Client, layout store.Layout) provider.Config {
	key := ""
	if pc.APIKeyEnv != "" {
		key = getenv(pc.APIKeyEnv)
	}
	headers := make(map[string]string, len(pc.Headers))
	for k, v := range pc.Headers {
		headers[k] = expandEnv(v, getenv)
	}
	cfg := provider.Config{Name: pc.Name, API: pc.API, BaseURL: expandEnv(pc.BaseURL, getenv), APIKey: key, Headers: headers,
		Secrets: secrets, HTTPClient: client}
	if pc.Script != "" {
		cfg.Script = layout.Path(pc.Script)
	}
	if r := pc.Retry; r != nil {
		cfg.MaxAttempts = r.Attempts
		cfg.RetryBaseDelay = time.Duration(r.BaseDelayMs) * time.Millisecond
	}
	return cfg
}

// keyVariables names the environment variables that may hold provider
// keys: the two Loop reads on its own, each provider's apiKeyEnv, and the
// variables its baseUrl and headers name. A bash command or an MCP server
// that inherited them could print a key into a tool result, the history
// and the client (docs/configuration.md, "Keys and tool processes").
func keyVariables(cfg *Config) []string {
	names := []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"}
	add := func(n string) string {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
		return ""
	}
	for _, pc := range cfg.Providers {
		add(pc.APIKeyEnv)
		expandEnv(pc.BaseURL, add)
		for _, v := range pc.Headers {
			expandEnv(v, add)
		}
	}
	return names
}

// osGetenv is the real environment, the default for Options.Getenv.
func osGetenv(k string) string { return os.Getenv(k) }

// expandEnv replaces $NAME and ${NAME} with environment values; "$$" is a
// literal "$", and a "$" not followed by a name stays as it is.
func expandEnv(s string, getenv func(string) string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 || !isEnvName(s[i+2:i+2+end]) {
				b.WriteByte('$')
				continue
			}
			b.WriteString(getenv(s[i+2 : i+2+end]))
			i += 2 + end
		default:
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || j > i+1 && s[j] >= '0' && s[j] <= '9') {
				j++
			}
			if j == i+1 {
				b.WriteByte('$')
				continue
			}
			b.WriteString(getenv(s[i+1 : j]))
			i = j - 1
		}
	}
	return b.String()
}

func isEnvName(n string) bool {
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for _, c := range n {
		if c != '_' && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
