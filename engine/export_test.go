package engine

import (
	"maps"

	"github.com/loopdev/loop/engine/provider"
)

// WrapProvider replaces the client of provider name in e's current catalog
// with wrap(client), so that tests can make a model client fail in ways no
// script can (a panic). It exists only in test builds.
func WrapProvider(e *Engine, name string, wrap func(provider.Provider) provider.Provider) {
	e.mu.Lock()
	defer e.mu.Unlock()
	cat := *e.cat
	cat.providers = maps.Clone(e.cat.providers)
	cat.providers[name] = wrap(cat.providers[name])
	e.cat = &cat
}
