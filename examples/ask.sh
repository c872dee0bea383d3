#!/usr/bin/env bash
# Ask one question about the current directory; the answer streams to stdout.
# Usage: examples/ask.sh [QUESTION]
set -euo pipefail
exec loop run ${LOOP_FLAGS:-} "${*:-What does this repository do?}"
