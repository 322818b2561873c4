#!/usr/bin/env bash
# Installs (the first time) and starts a real ComfyUI with this pack loaded, at http://127.0.0.1:8188:
# ComfyUI 0.3.75 (fetched into .comfyui/ComfyUI), or the ComfyUI tree COMFYUI_PATH names. It installs only
# what that ComfyUI and the pack need (scripts/setup-env.sh's server set: torch, the tree's own
# requirements.txt and the pack's requirements.txt), never the test tooling. The first start takes a few
# minutes and about 6 GB, most of it torch with its CUDA libraries.
#
#   PORT=8189          another port (default 8188); the server listens on 127.0.0.1 only
#   SAS_GPU=1          let ComfyUI use the GPU (default: the CPU)
#   COMFYUI_PATH=DIR   another ComfyUI tree (the folder with main.py); its environment is
#                      .comfyui/venv-<its version> (0.33.0: .comfyui/venv-0.33, the 0.33 test host's), or SAS_VENV
#
# Each ComfyUI has its own base folder (settings, outputs, the pack's link in custom_nodes):
# .comfyui/base-<its version>. Extra arguments go to ComfyUI's main.py.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
default_tree="$root/.comfyui/ComfyUI"
tree="${COMFYUI_PATH:-$default_tree}"
if [ "$(realpath -m "$tree")" = "$(realpath -m "$default_tree")" ]; then
  venv="${SAS_VENV:-$root/.venv}"
else
  version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$tree/comfyui_version.py" 2>/dev/null || true)"
  if [ -z "$version" ]; then
    echo "comfyui.sh: no ComfyUI at COMFYUI_PATH=$tree (it names the folder with main.py and comfyui_version.py)" >&2
    exit 1
  fi
  venv="${SAS_VENV:-$root/.comfyui/venv-${version%.0}}"
fi
SAS_SETUP=server SAS_VENV="$venv" bash "$root/scripts/setup-env.sh"
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$tree/comfyui_version.py")"
base="$root/.comfyui/base-$version"
mkdir -p "$base/custom_nodes"
ln -sfn "$root" "$base/custom_nodes/sage-attention-scope"
flags=(--listen 127.0.0.1 --port "${PORT:-8188}" --base-directory "$base"
       --database-url "sqlite:///:memory:" --disable-auto-launch)
[ "${SAS_GPU:-0}" = "1" ] || flags+=(--cpu)
echo "comfyui.sh: ComfyUI $version from $tree, environment $venv, base folder $base: http://127.0.0.1:${PORT:-8188}"
cd "$tree"
exec "$venv/bin/python" main.py "${flags[@]}" "$@"
