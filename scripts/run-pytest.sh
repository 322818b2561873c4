#!/usr/bin/env bash
# Runs ruff (ComfyUI's rule set, pyproject.toml) and then pytest under the Python given first; either
# failing fails the run, and pytest's "no tests collected" (exit 5) is a failure here, not a pass.
# Shared by scripts/test.sh, scripts/test-comfyui-0.33.sh and scripts/test-comfyui-0.12.sh.
set -uo pipefail
py="$1"
shift
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lint=0
if "$py" -m ruff --version >/dev/null 2>&1; then
  "$py" -m ruff check --no-cache "$root" || lint=1
else
  echo "ruff is not installed in this environment ($py -m pip install ruff); the lint step did not run." >&2
  lint=1
fi
"$py" -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests; that is a failure here, not a pass." >&2
  rc=1
fi
if [ "$lint" -ne 0 ]; then
  echo "ruff check failed (above): a lint failure fails the run." >&2
  [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
