#!/usr/bin/env bash
# Review uncommitted changes. The diff goes to the model as an attached
# text file named stdin, the instruction as the prompt.
# Usage: examples/review-diff.sh [GIT DIFF ARGUMENTS]
set -euo pipefail
diff=$(git diff "$@")
if [ -z "$diff" ]; then
	echo "review-diff: nothing to review" >&2
	exit 0
fi
printf '%s\n' "$diff" | loop run ${LOOP_FLAGS:-} \
	"Review this diff. List bugs first, each with file and line; then anything else worth changing."
