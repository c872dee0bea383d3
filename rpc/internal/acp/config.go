package acp

import (
	"encoding/json"
	"slices"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tools"
	"github.com/sourcegraph/jsonrpc2"
)

// Config option ids.
const (
	optMode   = "mode"
	optModel  = "model"
	optEffort = "effort"
)

// modes are the permission presets, in the engine's order.
func modes() []sessionMode {
	names := map[tools.Preset][2]string{
		tools.PresetReadOnly:       {"Read only", "Reads and searches the workspace; no edits; commands only in an OS sandbox that writes nowhere but the temp directory."},
		tools.PresetWorkspaceWrite: {"Workspace write", "Edits files in the workspace and runs commands without asking."},
		tools.PresetAsk:            {"Ask", "Asks before every edit, write and command."},
		tools.PresetFullAccess:     {"Full access", "Any tool on any path, without asking."},
	}
	var out []sessionMode
	for _, p := range tools.Presets() {
		n := names[p]
		if n[0] == "" {
			n[0] = string(p)
		}
		out = append(out, sessionMode{ID: string(p), Name: n[0], Description: n[1]})
	}
	return out
}

func modelValue(ref engine.ModelRef) string { return ref.Provider + "/" + ref.ID }

// configOptions are the session's selectors: mode (the presets again, for
// clients that show config options instead of modes), model and, when the
// model has levels, thinking effort.
func (a *Agent) configOptions(snap *engine.Snapshot) []configOption {
	var out []configOption
	mode := configOption{ID: optMode, Name: "Mode", Category: "mode", Type: "select", CurrentValue: snap.State.PermissionPreset}
	for _, m := range modes() {
		mode.Options = append(mode.Options, configSelect{Value: m.ID, Name: m.Name, Description: m.Description})
	}
	out = append(out, mode)

	models := a.eng.Models()
	if snap.Model != nil || len(models) > 0 {
		model := configOption{ID: optModel, Name: "Model", Category: "model", Type: "select"}
		for _, m := range models {
			model.Options = append(model.Options, configSelect{Value: modelValue(m.Ref()), Name: m.Name, Description: m.Provider})
		}
		if snap.Model != nil {
			model.CurrentValue = modelValue(*snap.Model)
			if !slices.ContainsFunc(model.Options, func(o configSelect) bool { return o.Value == model.CurrentValue }) {
				model.Options = append(model.Options, configSelect{Value: model.CurrentValue, Name: model.CurrentValue + " (not configured)"})
			}
		} else {
			model.CurrentValue = model.Options[0].Value
		}
		out = append(out, model)
	}

	if len(snap.Efforts) > 1 {
		effort := configOption{ID: optEffort, Name: "Thinking effort", Category: "thought_level", Type: "select", CurrentValue: snap.Effort}
		for _, e := range snap.Efforts {
			effort.Options = append(effort.Options, configSelect{Value: e, Name: e})
		}
		if !slices.Contains(snap.Efforts, snap.Effort) {
			effort.Options = append(effort.Options, configSelect{Value: snap.Effort, Name: snap.Effort})
		}
		out = append(out, effort)
	}
	return out
}

// legacyModels is the models block of clients that still use the
// pre-configOptions session/set_model.
func (a *Agent) legacyModels(snap *engine.Snapshot) *modelState {
	models := a.eng.Models()
	if len(models) == 0 {
		return nil
	}
	st := &modelState{}
	for _, m := range models {
		st.AvailableModels = append(st.AvailableModels, modelInfo{ModelID: modelValue(m.Ref()), Name: m.Name, Description: m.Provider})
	}
	if snap.Model != nil {
		st.CurrentModelID = modelValue(*snap.Model)
	} else {
		st.CurrentModelID = st.AvailableModels[0].ModelID
	}
	return st
}

// setup is the result of session/new, load and resume.
func (a *Agent) setup(snap *engine.Snapshot) sessionSetup {
	return sessionSetup{
		Modes:         &modeState{CurrentModeID: snap.State.PermissionPreset, AvailableModes: modes()},
		ConfigOptions: a.configOptions(snap),
		Models:        a.legacyModels(snap),
	}
}

// findModel resolves a "provider/id" value.
func (a *Agent) findModel(value string) (engine.ModelRef, error) {
	for _, m := range a.eng.Models() {
		if modelValue(m.Ref()) == value {
			return m.Ref(), nil
		}
	}
	return engine.ModelRef{}, &engine.Error{Code: engine.CodeModelNotFound, Message: "no model " + value + " is configured"}
}

func (a *Agent) sessionSetMode(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModeID    string `json:"modeId"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	if err := required("modeId", p.ModeID); err != nil {
		return nil, err
	}
	// Inline, in request order: a prompt sent after it runs with the
	// new setting (a header write, never a model call).
	return func() (any, error) {
		sess, err := a.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		if _, err := sess.SetPermission(p.ModeID); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	}()
}

func (a *Agent) sessionSetConfigOption(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		SessionID string          `json:"sessionId"`
		ConfigID  string          `json:"configId"`
		Value     json.RawMessage `json:"value"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	var value string
	if err := json.Unmarshal(p.Value, &value); err != nil || value == "" {
		return nil, invalidParams("value must be one of the option's values (a string)")
	}
	switch p.ConfigID {
	case optMode, optModel, optEffort:
	case "":
		return nil, invalidParams("configId is required")
	default:
		return nil, invalidParams("unknown configId %q (mode, model, effort)", p.ConfigID)
	}
	// Inline, in request order: a prompt sent after it runs with the
	// new setting (a header write, never a model call).
	return func() (any, error) {
		sess, err := a.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		var snap *engine.Snapshot
		switch p.ConfigID {
		case optMode:
			snap, err = sess.SetPermission(value)
		case optModel:
			var ref engine.ModelRef
			if ref, err = a.findModel(value); err == nil {
				snap, err = sess.SetModel(ref, nil)
			}
		case optEffort:
			cur := sess.Snapshot().Model
			if cur == nil {
				return nil, &engine.Error{Code: engine.CodeModelNotFound, Message: "the session has no model to set an effort for"}
			}
			snap, err = sess.SetModel(*cur, &value)
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{"configOptions": a.configOptions(snap)}, nil
	}()
}

// sessionSetModel is the older, pre-configOptions way to pick a model.
func (a *Agent) sessionSetModel(_ jsonrpc2.ID, raw *json.RawMessage) (any, error) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModelID   string `json:"modelId"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := required("sessionId", p.SessionID); err != nil {
		return nil, err
	}
	if err := required("modelId", p.ModelID); err != nil {
		return nil, err
	}
	// Inline, in request order: a prompt sent after it runs with the
	// new setting (a header write, never a model call).
	return func() (any, error) {
		sess, err := a.eng.Session(p.SessionID)
		if err != nil {
			return nil, err
		}
		ref, err := a.findModel(p.ModelID)
		if err != nil {
			return nil, err
		}
		if _, err := sess.SetModel(ref, nil); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	}()
}
