#!/usr/bin/env bash
# Runs the whole suite against ComfyUI 0.33.0, the second test host (.ci/run runs it after the README's
# test command). The tree comes from comfyui-0.33.0.tar.xz (the project's shared folder beside this
# checkout, ../shared/comfyui_host/, or SAS_COMFYUI_033_TARBALL), unpacked into .comfyui/comfyui-0.33;
# its environment is .comfyui/venv-0.33 with 0.33's own requirements (scripts/requirements-comfyui-0.33.txt).
# Both are git-ignored: none of ComfyUI is committed. Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tarball="${SAS_COMFYUI_033_TARBALL:-$root/../shared/comfyui_host/comfyui-0.33.0.tar.xz}"
tree="$root/.comfyui/comfyui-0.33"

if [ ! -f "$tree/comfy/model_patcher.py" ]; then
  if [ ! -f "$tarball" ]; then
    echo "test-comfyui-0.33: no ComfyUI 0.33 tree at $tree and no tarball at $tarball." >&2
    echo "test-comfyui-0.33: set SAS_COMFYUI_033_TARBALL to comfyui-0.33.0.tar.xz (a ComfyUI/ tree packed with tar -cJ)." >&2
    exit 1
  fi
  echo "test-comfyui-0.33: unpacking $tarball into $tree"
  tmp="$(mktemp -d)"
  tar -xJf "$tarball" -C "$tmp"
  mkdir -p "$root/.comfyui"
  rm -rf "$tree"
  mv "$tmp/ComfyUI" "$tree"
  rm -rf "$tmp"
fi

export COMFYUI_PATH="$tree" SAS_VENV="$root/.comfyui/venv-0.33"
SAS_REQUIREMENTS="$root/scripts/requirements-comfyui-0.33.txt" bash "$root/scripts/setup-env.sh"
exec bash "$root/scripts/run-pytest.sh" "$SAS_VENV/bin/python" "$@"
