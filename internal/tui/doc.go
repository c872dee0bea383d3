// Package tui is the terminal user interface of `loop chat` (docs/cli.md,
// "loop chat"): a Bubble Tea program in inline mode whose finished output
// (Markdown rendered, tool lines, Loop's own lines) goes into the
// terminal's scrollback above it, while the part still changing (the
// streaming answer's last block, the spinner, an approval, the input
// being typed) is redrawn below. It knows nothing of the engine: the chat
// in cmd/loop sends it messages (message.go) and takes what the person
// does through the App it is given.
//
// The Markdown renderer (markdown.go) and the code highlighter
// (highlight.go) are this package's own: a Markdown library (goldmark)
// and a highlighter (chroma) build tables and register lexers in package
// init functions, which every process runs, the JSON-RPC server included
// (docs/performance.md).
package tui
