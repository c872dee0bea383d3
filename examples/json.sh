#!/usr/bin/env bash
# loop run in a script: the json result, its exit status, and a follow-up
# in the same session. Needs jq.
# Usage: examples/json.sh QUESTION [FOLLOW-UP]
set -uo pipefail
question=${1:?usage: json.sh QUESTION [FOLLOW-UP]}
result=$(loop run ${LOOP_FLAGS:-} --output json "$question")
case $? in
0) ;;
1) echo "json.sh: the run failed: $(jq -r '.error.code + ": " + .error.message' <<<"$result")" >&2; exit 1 ;;
3) echo "json.sh: the answer could not be saved; loop named the recovery file above" >&2; exit 3 ;;
*) exit 2 ;; # bad usage or configuration: loop said why on stderr
esac
jq -r .text <<<"$result"
session=$(jq -r .sessionId <<<"$result")
echo "--- session $session, $(jq .usage.totalTokens <<<"$result") tokens"
loop run ${LOOP_FLAGS:-} --session "$session" "${2:-Now say it in one sentence.}"
