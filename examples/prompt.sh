#!/usr/bin/env bash
# Prompt Loop once through a pipe and print the streamed reply.
# Usage: examples/prompt.sh "your prompt"   (uses bin/loop --demo unless LOOP_ARGS is set)
set -euo pipefail
loop=${LOOP:-"$(dirname "$0")/../bin/loop"}
text=${1:-hello}
coproc LOOPP { "$loop" ${LOOP_ARGS:---demo} 2>/dev/null; }
send() { printf '%s\n' "$1" >&"${LOOPP[1]}"; }
json_string() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1" 2>/dev/null || printf '"%s"' "$1"; }

send '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"workspaceId":null}}'
read -r line <&"${LOOPP[0]}"
sid=$(sed -E 's/.*"sessionId":"([^"]+)".*/\1/' <<<"$line")
send '{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"'"$sid"'","requestId":"cli-1","text":'"$(json_string "$text")"'}}'
while read -r line <&"${LOOPP[0]}"; do
  case $line in
    *'"event":"delta"'*'"type":"text"'*)
      printf '%s' "$(sed -E 's/.*"delta":"(([^"\\]|\\.)*)".*/\1/' <<<"$line" | sed 's/\\n/\n/g; s/\\"/"/g')" ;;
    *'"method":"session/tool"'*'"event":"start"'*)
      printf '\n[tool %s]\n' "$(sed -E 's/.*"name":"([^"]+)".*/\1/' <<<"$line")" ;;
    *'"method":"session/agent_settled"'*)
      printf '\n'; break ;;
  esac
done
exec {LOOPP[1]}>&-
wait
