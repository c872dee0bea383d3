package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/internal/tools"
)

const completionUsage = `Usage: loop completion bash|zsh|fish

Prints a completion script for the shell: the subcommands, each one's flags, and the
values of the flags that take one of a few. It is made from the binary's own flag
sets, so it always matches it. Load it from the shell's startup file:

  bash   source <(loop completion bash)               # in ~/.bashrc
  zsh    source <(loop completion zsh)                # in ~/.zshrc, after compinit
  fish   loop completion fish | source                # in ~/.config/fish/config.fish

Flags:
`

// shells are the shells loop completion writes for.
var shells = []string{"bash", "zsh", "fish"}

// completionCommand is loop completion (docs/cli.md).
func completionCommand(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loop completion", flag.ContinueOnError)
	if code, done := parseFlags(fs, completionUsage, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 1 || !slices.Contains(shells, fs.Arg(0)) {
		fmt.Fprintf(stderr, "loop completion: want one of bash, zsh and fish (see loop completion -h)\n")
		return exitUsage
	}
	spec := completionSpec()
	var script string
	switch fs.Arg(0) {
	case "bash":
		script = bashCompletion(spec)
	case "zsh":
		script = zshCompletion(spec)
	case "fish":
		script = fishCompletion(spec)
	}
	if _, err := io.WriteString(stdout, script); err != nil {
		fmt.Fprintf(stderr, "loop completion: %v\n", err)
		return exitRunError
	}
	return exitOK
}

// compFlag is one flag as a completion script offers it.
type compFlag struct {
	name    string   // without dashes
	usage   string   // its first line
	value   bool     // it takes a value
	choices []string // the values it takes, when they are a few
	dir     bool     // its value is a directory
}

// spelled is the flag as typed: -c for a one-letter name, --name else.
func (f compFlag) spelled() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// compCommand is a subcommand, or plain loop (name ""), as a completion
// script offers it.
type compCommand struct {
	name, summary string
	flags         []compFlag
	words         []string // fixed words it takes; nil: files
}

// completionSpec is what the scripts complete, read from the commands'
// own flag sets (flagsOf): a flag any command adds appears by itself.
func completionSpec() []compCommand {
	var out []compCommand
	plain := map[string]compFlag{}
	for _, c := range commands() {
		cc := compCommand{name: c.name, summary: strings.SplitN(c.summary, "\n", 2)[0], words: c.words}
		if c.name == "help" {
			for _, o := range commands() {
				cc.words = append(cc.words, o.name)
			}
		}
		cc.flags = compFlags(flagsOf(c))
		switch c.name {
		case "run", "chat", "serve":
			// Plain loop takes each of them, as it turns into one.
			for _, f := range cc.flags {
				plain[f.name] = f
			}
		}
		out = append(out, cc)
	}
	plain["p"] = compFlag{name: "p", usage: "one prompt, the answer on stdout (as loop run)"}
	plain["h"] = compFlag{name: "h", usage: "the commands and the flags of the server"}
	plain["version"] = compFlag{name: "version", usage: "print the version and exit"}
	plain["v"] = compFlag{name: "v", usage: "short for --version"}
	p := compCommand{name: "", summary: "loop", words: []string{}}
	for _, f := range plain {
		p.flags = append(p.flags, f)
	}
	sort.Slice(p.flags, func(i, j int) bool { return p.flags[i].name < p.flags[j].name })
	return append([]compCommand{p}, out...)
}

// flagChoices are the values of the flags that take one of a few, by
// flag name, whichever command defines it.
func flagChoices(name string) []string {
	switch name {
	case "output":
		return []string{"text", "json", "stream-json"}
	case "permission":
		var ps []string
		for _, p := range tools.Presets() {
			ps = append(ps, string(p))
		}
		return ps
	case "effort":
		return engine.Efforts
	case "format":
		return []string{engine.ExportMarkdown, engine.ExportJSON}
	case "framing":
		return []string{"auto", "lsp", "ndjson"}
	case "on-eof":
		return []string{"drain", "abort"}
	case "log-level":
		return []string{"debug", "info", "warn", "error"}
	case "color":
		return []string{"auto", "always", "never"}
	}
	return nil
}

func compFlags(fs *flag.FlagSet) []compFlag {
	var out []compFlag
	fs.VisitAll(func(f *flag.Flag) {
		cf := compFlag{name: f.Name, usage: strings.SplitN(f.Usage, "\n", 2)[0], value: !isBoolFlag(f)}
		if cf.value {
			cf.choices = flagChoices(f.Name)
			cf.dir = f.Name == "cwd" || f.Name == "data-dir"
		}
		out = append(out, cf)
	})
	return out
}

// bashCompletion is the script for bash: the subcommand is the first
// word, as loop reads it.
func bashCompletion(spec []compCommand) string {
	var b strings.Builder
	b.WriteString(`# bash completion for loop; load it with: source <(loop completion bash)
_loop() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    local cmd="" flags="" words="" dirs="" valued="" files=""
    if [[ $COMP_CWORD -gt 1 ]]; then cmd="${COMP_WORDS[1]}"; fi
    case "$prev" in
`)
	// A flag's choices are the same under every command that has it.
	seen := map[string]bool{}
	for _, c := range spec {
		for _, f := range c.flags {
			if len(f.choices) > 0 && !seen[f.name] {
				seen[f.name] = true
				fmt.Fprintf(&b, "        --%s|-%s) COMPREPLY=($(compgen -W %s -- \"$cur\")); return ;;\n", f.name, f.name, shellQuote(strings.Join(f.choices, " ")))
			}
		}
	}
	b.WriteString("    esac\n    case \"$cmd\" in\n")
	var names []string
	for _, c := range spec {
		if c.name != "" {
			names = append(names, c.name)
		}
	}
	// Plain loop last: its pattern matches any word.
	for _, c := range append(spec[1:], spec[0]) {
		pattern := shellQuote(c.name) + ")"
		if c.name == "" {
			pattern = `*) cmd="";`
		}
		var flags, dirs, valued []string
		for _, f := range c.flags {
			flags = append(flags, f.spelled())
			if f.value {
				valued = append(valued, "-"+f.name, "--"+f.name)
			}
			if f.dir {
				dirs = append(dirs, "-"+f.name, "--"+f.name)
			}
		}
		words, files := c.words, ""
		switch {
		case c.name == "":
			words = names
		case c.words == nil:
			files = "1"
		}
		fmt.Fprintf(&b, "        %s flags=%s; valued=%s; dirs=%s; words=%s; files=%s ;;\n", pattern,
			shellQuote(strings.Join(flags, " ")), shellQuote(" "+strings.Join(valued, " ")+" "),
			shellQuote(" "+strings.Join(dirs, " ")+" "), shellQuote(strings.Join(words, " ")), shellQuote(files))
	}
	b.WriteString(`    esac
    if [[ "$dirs" == *" $prev "* ]]; then COMPREPLY=($(compgen -d -- "$cur")); return; fi
    if [[ "$valued" == *" $prev "* ]]; then COMPREPLY=($(compgen -f -- "$cur")); return; fi
    if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur")); return; fi
    if [[ -n "$cmd" && -n "$files" ]]; then COMPREPLY=($(compgen -f -- "$cur")); return; fi
    if [[ -z "$cmd" && $COMP_CWORD -gt 1 ]]; then return; fi
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _loop loop
`)
	return b.String()
}

// zshCompletion is the script for zsh, on _arguments.
func zshCompletion(spec []compCommand) string {
	var b strings.Builder
	b.WriteString(`#compdef loop
# zsh completion for loop; load it with: source <(loop completion zsh)
_loop() {
    local -a commands
    commands=(
`)
	for _, c := range spec {
		if c.name != "" {
			fmt.Fprintf(&b, "        %s\n", shellQuote(c.name+":"+zshEscape(c.summary)))
		}
	}
	b.WriteString(`    )
    if (( CURRENT == 2 )) && [[ $words[CURRENT] != -* ]]; then
        _describe -t commands 'loop command' commands
        return
    fi
    local cmd=""
    case $words[2] in
`)
	for _, c := range spec {
		if c.name != "" {
			fmt.Fprintf(&b, "        %s) cmd=%s; shift words; (( CURRENT-- )) ;;\n", shellQuote(c.name), shellQuote(c.name))
		}
	}
	b.WriteString("    esac\n    case $cmd in\n")
	for _, c := range spec {
		pattern := shellQuote(c.name)
		if c.name == "" {
			pattern = "''"
		}
		fmt.Fprintf(&b, "        %s) _arguments -S \\\n", pattern)
		for _, f := range c.flags {
			spec := f.spelled()
			if f.value {
				spec += "="
			}
			spec += "[" + zshEscape(f.usage) + "]"
			switch {
			case len(f.choices) > 0:
				spec += ":" + f.name + ":(" + strings.Join(f.choices, " ") + ")"
			case f.dir:
				spec += ":directory:_files -/"
			case f.value:
				spec += ":" + f.name + ":_files"
			}
			fmt.Fprintf(&b, "            %s \\\n", shellQuote(spec))
		}
		switch {
		case c.name == "":
			fmt.Fprintf(&b, "            %s ;;\n", shellQuote("*:prompt: "))
		case c.words == nil:
			fmt.Fprintf(&b, "            %s ;;\n", shellQuote("*:file:_files"))
		case len(c.words) == 0:
			b.WriteString("            ;;\n")
		default:
			fmt.Fprintf(&b, "            %s ;;\n", shellQuote("1:word:("+strings.Join(c.words, " ")+")"))
		}
	}
	b.WriteString(`    esac
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _loop "$@"
else
    compdef _loop loop
fi
`)
	return b.String()
}

// fishCompletion is the script for fish.
func fishCompletion(spec []compCommand) string {
	var b strings.Builder
	b.WriteString("# fish completion for loop; load it with: loop completion fish | source\ncomplete -c loop -e\n")
	var names []string
	for _, c := range spec {
		if c.name != "" {
			names = append(names, c.name)
		}
	}
	for _, c := range spec {
		cond := "__fish_use_subcommand"
		if c.name != "" {
			cond = "__fish_seen_subcommand_from " + c.name
			fmt.Fprintf(&b, "complete -c loop -f -n __fish_use_subcommand -a %s -d %s\n", fishQuote(c.name), fishQuote(c.summary))
		}
		for _, f := range c.flags {
			line := "complete -c loop -n " + fishQuote(cond)
			if len(f.name) == 1 {
				line += " -s " + f.name
			} else {
				line += " -l " + f.name
			}
			line += " -d " + fishQuote(f.usage)
			switch {
			case len(f.choices) > 0:
				line += " -x -a " + fishQuote(strings.Join(f.choices, " "))
			case f.dir:
				line += " -x -a " + fishQuote("(__fish_complete_directories)")
			case f.value:
				line += " -r -F"
			}
			b.WriteString(line + "\n")
		}
		if c.name != "" && len(c.words) > 0 {
			fmt.Fprintf(&b, "complete -c loop -f -n %s -a %s\n", fishQuote(cond), fishQuote(strings.Join(c.words, " ")))
		}
	}
	return b.String()
}

// shellQuote is s in single quotes for bash and zsh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// zshEscape escapes what _arguments and _describe read in a description.
func zshEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, ":", `\:`, "[", `\[`, "]", `\]`).Replace(s)
}

// fishQuote is s in single quotes for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}
