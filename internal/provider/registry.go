package provider

import (
	"errors"
	"fmt"
	"strings"
)

// API is one provider API Loop speaks. Whatever the rest of Loop decides
// by an API's name (config.json's "api", a model's api, a trace's call
// record) it asks the entry in apis below, so that a new API is one entry
// here and not a search for switches (cmd/loop/shape_test.go checks).
type API struct {
	// Name is the "api" value that names it.
	Name string
	// Configurable: config.json may name it. The demo model comes only
	// with --demo.
	Configurable bool
	// Replayable: its requests are HTTP bodies, so a trace records them
	// whole, a trace's configuration record keeps its providers, and
	// loop replay answers its calls (docs/traces.md). A call of another
	// API is traced as its logical request and its reply.
	Replayable bool
	// Titles: its sessions start background titles unless the provider's
	// "titles" says otherwise. Off for the scripted model, so that
	// scripts stay deterministic.
	Titles bool

	check func(Config) error             // what the API needs of a Config beyond its name
	build func(Config) (Provider, error) // its client, from a checked Config
}

// apis are the APIs Loop speaks, in the order messages list them. The
// table is never written.
var apis = [...]API{
	{Name: APIOpenAI, Configurable: true, Replayable: true, Titles: true,
		build: func(cfg Config) (Provider, error) { return NewOpenAI(cfg), nil }},
	{Name: APIOpenAIResponses, Configurable: true, Replayable: true, Titles: true,
		build: func(cfg Config) (Provider, error) { return NewResponses(cfg), nil }},
	{Name: APIAnthropic, Configurable: true, Replayable: true, Titles: true,
		build: func(cfg Config) (Provider, error) { return NewAnthropic(cfg), nil }},
	{Name: APIScripted, Configurable: true, check: checkScripted, build: buildScripted},
	{Name: APIDemo, build: func(Config) (Provider, error) { return Demo(), nil }},
}

// Lookup returns the API name names.
func Lookup(name string) (API, bool) {
	for _, a := range apis {
		if a.Name == name {
			return a, true
		}
	}
	return API{}, false
}

// Replayable reports whether calls of the API name names can be replayed
// from a trace (API.Replayable); an unknown API's cannot.
func Replayable(name string) bool {
	a, ok := Lookup(name)
	return ok && a.Replayable
}

// APINames returns the names of the APIs keep selects, in table order.
func APINames(keep func(API) bool) []string {
	var out []string
	for _, a := range apis {
		if keep == nil || keep(a) {
			out = append(out, a.Name)
		}
	}
	return out
}

// JoinOr lists names for a message: "a, b or c".
func JoinOr(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func configurable(a API) bool { return a.Configurable }

// CheckConfig checks the api of a providers entry of config.json
// (docs/configuration.md) and what that API needs of the entry.
func CheckConfig(cfg Config) error {
	if cfg.API == "" {
		return fmt.Errorf(`missing "api" (%s)`, JoinOr(APINames(configurable)))
	}
	a, ok := Lookup(cfg.API)
	if !ok || !a.Configurable {
		return fmt.Errorf("unknown api %q (want %s)", cfg.API, JoinOr(APINames(configurable)))
	}
	return a.checkConfig(cfg)
}

func (a API) checkConfig(cfg Config) error {
	if a.check == nil {
		return nil
	}
	return a.check(cfg)
}

// New builds the client cfg.API names.
func New(cfg Config) (Provider, error) {
	a, ok := Lookup(cfg.API)
	if !ok {
		return nil, fmt.Errorf("provider %q: unknown api %q (want %s)", cfg.Name, cfg.API, JoinOr(APINames(nil)))
	}
	if err := a.checkConfig(cfg); err != nil {
		return nil, fmt.Errorf("provider %q: %w", cfg.Name, err)
	}
	return a.build(cfg)
}

func checkScripted(cfg Config) error {
	if cfg.Script == "" {
		return errors.New(`api "scripted" needs "script"`)
	}
	return nil
}

// buildScripted reads the script. Its replies name the provider when the
// Config does (the engine names a turn's reply after its model, and keeps
// only the text of a title or a summary).
func buildScripted(cfg Config) (Provider, error) {
	p, err := NewScripted(cfg.Script)
	if err != nil {
		return nil, fmt.Errorf("provider %q: %w", cfg.Name, err)
	}
	if cfg.Name != "" {
		p.(*Scripted).name = cfg.Name
	}
	return p, nil
}
