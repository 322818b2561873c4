#!/usr/bin/env bash
# Runs pytest under the Python given first; pytest's "no tests collected" (exit 5) is a failure
# here, not a pass. Shared by scripts/test.sh and scripts/test-comfyui-0.12.sh.
set -uo pipefail
py="$1"
shift
"$py" -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests; that is a failure here, not a pass." >&2
  exit 1
fi
exit "$rc"
