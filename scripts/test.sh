#!/usr/bin/env bash
# Sets up (once) and runs the test suite on a real ComfyUI. Extra arguments go to pytest,
# e.g. `bash scripts/test.sh -m gpu` on a CUDA machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup-env.sh"
cd "$root"
exec bash "$root/scripts/run-pytest.sh" "${SAS_VENV:-$root/.venv}/bin/python" "$@"
