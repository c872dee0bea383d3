#!/usr/bin/env bash
# stream-json with jq: the answer as it arrives, one line per tool call,
# and the outcome at the end. Each line is a notification exactly as the
# JSON-RPC server sends it (docs/protocol.md), then {"result": ...}.
# Usage: examples/stream.sh [QUESTION]
set -euo pipefail
loop run ${LOOP_FLAGS:-} --output stream-json "${*:-What does this repository do?}" |
	jq -j --unbuffered '
		if .method == "session/message" and .params.event == "delta" and .params.type == "text" then .params.delta
		elif .method == "session/tool" and .params.event == "start" then "\n[\(.params.name) \(.params.input | tojson)]\n"
		elif .result then "\n(\(.result.outcome), \(.result.usage.totalTokens) tokens)\n"
		else empty end'
