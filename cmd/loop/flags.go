package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseFlags parses args into fs, with the flags wherever they stand:
// before, between or after the words (`loop run hi --output json`); `--`
// ends them, and everything after it is a word (docs/cli.md). Help goes
// to stdout in full; a bad flag is one line on stderr. done is true when
// the caller should return code.
//
// Every command calls it first, before it does anything else: handed a
// *commandFlags as stdout, it gives that the command's flag set and
// returns at once (flagsOf), which is how the shell completion and the
// dispatch of plain loop learn each command's real flags.
func parseFlags(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) (code int, done bool) {
	if cf, ok := stdout.(*commandFlags); ok {
		cf.fs, cf.usage = fs, usage
		return 0, true
	}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(interspersed(fs, args))
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, usage)
		fs.PrintDefaults()
		return 0, true
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see %s -h)\n", fs.Name(), err, fs.Name())
		return exitUsage, true
	}
	return 0, false
}

// interspersed reorders args for fs.Parse, which stops at the first word:
// the flags (with the values of those that take one) first, in their
// order, then "--", then the words in theirs. So fs.Args() is the words,
// whatever flags stood among them.
func interspersed(fs *flag.FlagSet, args []string) []string {
	flags, words, _ := splitArgs(fs, args)
	out := make([]string, 0, len(args)+1)
	out = append(out, flags...)
	out = append(out, "--")
	return append(out, words...)
}

// splitArgs tells the flags of args from its words: flags are the flags
// with their values, in order; words are the rest, those after "--"
// included; at holds the index in args of each flag (not of a value given
// as the next argument). A flag fs does not define is taken as one
// without a value, for fs.Parse to refuse.
func splitArgs(fs *flag.FlagSet, args []string) (flags, words []string, at []int) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(words, args[i+1:]...), at
		}
		name, ok := flagName(a)
		if !ok {
			words = append(words, a)
			continue
		}
		flags, at = append(flags, a), append(at, i)
		if strings.Contains(name, "=") || i+1 == len(args) {
			continue
		}
		if f := fs.Lookup(name); f != nil && !isBoolFlag(f) {
			i++
			flags = append(flags, args[i])
		}
	}
	return flags, words, at
}

// flagName is a's name when a is a flag as Go's flag package reads one
// (-name, --name, -name=value; the value stays in the name): "-" and
// words are not flags.
func flagName(a string) (string, bool) {
	if len(a) < 2 || a[0] != '-' {
		return "", false
	}
	name := a[1:]
	if name[0] == '-' {
		name = name[1:]
	}
	return name, name != ""
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// commandFlags receives a command's flag set and usage from parseFlags in
// place of running it. It is the stdout the command is called with, and
// discards anything written to it.
type commandFlags struct {
	fs    *flag.FlagSet
	usage string
}

func (*commandFlags) Write(p []byte) (int, error) { return len(p), nil }

// flagsOf is the flag set of command c, as c itself defines it: c is
// called with a *commandFlags for stdout and returns from parseFlags
// before it reads anything or opens anything.
func flagsOf(c command) *flag.FlagSet {
	cf := &commandFlags{}
	c.run(nil, strings.NewReader(""), cf, io.Discard)
	if cf.fs == nil {
		// Every command parses its flags first; one that did not is a
		// bug of this binary, which an empty set keeps from crashing.
		return flag.NewFlagSet("loop "+c.name, flag.ContinueOnError)
	}
	return cf.fs
}
