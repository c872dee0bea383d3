// Package tools holds the agent's built-in tools (read, write, edit, bash,
// ls, grep, find) and the permission presets that decide which calls run.
//
// Permission checks live in Decide, which the engine calls before Run; a
// denied call goes back to the model as an ordinary tool error. The file
// tools also re-check workspace containment inside Run under the confined
// presets, so a caller that forgets Decide still cannot read or write outside
// the workspace through them. bash is never sandboxed: a preset that allows
// bash allows whatever the shell can do with the user's rights.
package tools
