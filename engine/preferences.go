package engine

import (
	"encoding/json"
	"sync"

	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/internal/regfile"
	"github.com/loopdev/loop/store"
)

// preferences remembers the last model and effort a user chose, so new
// sessions start with them (docs/configuration.md, defaults for new sessions).
type preferences struct {
	path string
	// writeMu is the file's write queue: held across a write, so the
	// last choice made is the one on disk. mu guards data and is never
	// held across I/O, so new sessions do not wait for a write.
	writeMu sync.Mutex
	mu      sync.Mutex
	data    struct {
		Model  *ModelChoice `json:"model,omitempty"`
		Effort string       `json:"effort,omitempty"`
	}
}

// maxPreferencesBytes bounds preferences.json, which holds one model
// choice and an effort.
const maxPreferencesBytes = 1 << 20

func loadPreferences(path string) *preferences {
	p := &preferences{path: path}
	// Only a regular file: a FIFO would block the engine's start forever.
	if b, err := regfile.Read(path, maxPreferencesBytes); err == nil {
		// A damaged preferences file only loses the remembered choice.
		_ = json.Unmarshal(b, &p.data)
	}
	return p
}

func (p *preferences) model() (ModelRef, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.data.Model == nil {
		return ModelRef{}, "", false
	}
	effort := p.data.Effort
	if effort == "" {
		effort = EffortDefault
	}
	return p.data.Model.Ref(), effort, true
}

// remember saves the choice before the model command reports success.
func (p *preferences) remember(ref ModelRef, effort string) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.mu.Lock()
	choice := ModelChoice(ref)
	p.data.Model = &choice
	p.data.Effort = effort
	data := p.data
	p.mu.Unlock()
	b, err := jsonenc.MarshalIndent(data, "", "  ")
	if err != nil {
		return err
	}
	return store.WriteFileAtomic(p.path, b, 0o600)
}
