#!/usr/bin/env bash
# Sets up (once) and runs the test suite on a real ComfyUI. Extra arguments go to pytest,
# e.g. `bash scripts/test.sh -m gpu` on a CUDA machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup-env.sh"
cd "$root"
set +e
"${SAS_VENV:-$root/.venv}/bin/python" -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure here, not a pass." >&2
  exit 1
fi
exit "$rc"
