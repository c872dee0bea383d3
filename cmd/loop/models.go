package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/jsonenc"
	"github.com/loopdev/loop/rpc"
	"github.com/loopdev/loop/store"
)

const modelsUsage = `Usage: loop models [--json] [--demo] [--data-dir DIR]

Lists the configured models (config.json and the providers found from OPENAI_API_KEY or
ANTHROPIC_API_KEY), in configuration order: PROVIDER/ID, its API, context window, and
whether it can be used, without asking any provider (no network): a model whose
provider's apiKeyEnv is empty cannot. * marks the model a new session gets. --json
prints {"models": [...], "configError"?}, each entry as model/list gives it
(docs/protocol.md) with "default", "usable" and, when not, "unusable" (why).

Exit status: 0 listed (also when nothing is configured: a line on stderr says so); 2 bad
usage, or a config.json that cannot be used (said on stderr).

Flags:
`

// modelEntry is one line of loop models, and one entry of its json.
type modelEntry struct {
	rpc.Model
	Default bool `json:"default"`
	Usable  bool `json:"usable"`
	// Unusable says why it cannot be used; absent when it can.
	Unusable string `json:"unusable,omitempty"`
}

// modelsCommand is loop models (docs/cli.md).
func modelsCommand(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop models", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "data root (as for loop)")
	demo := fs.Bool("demo", false, "add the built-in offline demo model")
	asJSON := fs.Bool("json", false, `print {"models": [...]} as JSON`)
	if code, done := parseFlags(fs, modelsUsage, args, stdout, stderr); done {
		return code
	}
	fail := failWith("loop models", stderr)
	if fs.NArg() > 0 {
		return fail(usagef("unexpected argument %q (see loop models -h)", fs.Arg(0)))
	}
	root, err := store.ResolveDataRoot(*dataDir)
	if err != nil {
		return fail(usagef("data root: %v", err))
	}
	e, err := newEngine(root, newLineLogger(stderr, "loop models", slog.LevelError+4), withDemo(*demo))
	if err != nil {
		return fail(usagef("%v", err))
	}
	defer e.Shutdown(context.Background(), engine.Drain)
	def, defErr := e.DefaultModel()
	models := e.Models()
	entries := make([]modelEntry, 0, len(models))
	for i := range models {
		m := &models[i]
		en := modelEntry{Model: rpc.ModelOf(m), Default: defErr == nil && m.Ref() == def, Usable: m.MissingKey == ""}
		if !en.Usable {
			en.Unusable = m.MissingKey + " is not set"
		}
		entries = append(entries, en)
	}
	cfgErr := e.ConfigError()
	if *asJSON {
		out := map[string]any{"models": entries}
		if cfgErr != nil {
			out["configError"] = cfgErr.Error()
		}
		_ = jsonenc.NewEncoder(stdout).Encode(out)
	} else {
		writeModels(stdout, entries)
	}
	switch {
	case cfgErr != nil:
		return fail(usagef("config_error: %v", cfgErr))
	case len(entries) == 0:
		fmt.Fprintf(stderr, "loop models: no model provider is configured: add one to %s, set OPENAI_API_KEY or ANTHROPIC_API_KEY, or pass --demo\n", store.NewLayout(root).Config())
	}
	return exitOK
}

// writeModels prints entries as aligned columns, with a heading.
func writeModels(w io.Writer, entries []modelEntry) {
	if len(entries) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  MODEL\tAPI\tCONTEXT\tUSABLE")
	for _, en := range entries {
		mark := " "
		if en.Default {
			mark = "*"
		}
		usable := "yes"
		if !en.Usable {
			usable = "no: " + en.Unusable
		}
		fmt.Fprintf(tw, "%s %s/%s\t%s\t%d\t%s\n", mark, en.Provider, en.ID, en.API, en.ContextWindow, usable)
	}
	_ = tw.Flush()
}
