#!/usr/bin/env bash
# Sets up (once) and starts a real ComfyUI with this pack loaded, on the CPU unless you pass
# other ComfyUI flags (e.g. `bash scripts/comfyui.sh` for CPU, `SAS_GPU=1 bash scripts/comfyui.sh`
# to let ComfyUI use your GPU). Open http://127.0.0.1:8188 (PORT=... to change).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/setup-env.sh"
comfy="${COMFYUI_PATH:-$root/.comfyui/ComfyUI}"
base="$root/.comfyui/base"
mkdir -p "$base/custom_nodes"
ln -sfn "$root" "$base/custom_nodes/sage-attention-scope"
flags=(--listen 127.0.0.1 --port "${PORT:-8188}" --base-directory "$base"
       --database-url "sqlite:///:memory:" --disable-auto-launch)
[ "${SAS_GPU:-0}" = "1" ] || flags+=(--cpu)
cd "$comfy"
exec "${SAS_VENV:-$root/.venv}/bin/python" main.py "${flags[@]}" "$@"
