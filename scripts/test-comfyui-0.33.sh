#!/usr/bin/env bash
# Runs the whole suite against ComfyUI 0.33.0, the second test host (.ci/run runs it beside the README's
# test command). Extra arguments go to pytest.
#
# The tree: .comfyui/comfyui-0.33, unpacked the first time from comfyui-0.33.0.tar.xz (a ComfyUI/ folder
# packed with tar -cJ). The tarball is looked for, in this order, at
#   $SAS_COMFYUI_033_TARBALL                          (set it to point anywhere else)
#   <this checkout>/shared/comfyui_host/comfyui-0.33.0.tar.xz
#   <this checkout>/../shared/comfyui_host/comfyui-0.33.0.tar.xz   (the project's shared folder beside it)
# Delete .comfyui/comfyui-0.33 to unpack it again. Its environment is .comfyui/venv-0.33, with 0.33's own
# requirements and the suite's (scripts/requirements-comfyui-0.33.txt). Both are git-ignored: none of ComfyUI
# is committed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tree="$root/.comfyui/comfyui-0.33"
name="comfyui-0.33.0.tar.xz"

if [ ! -f "$tree/comfy/model_patcher.py" ]; then
  places=("$root/shared/comfyui_host/$name" "$root/../shared/comfyui_host/$name")
  [ -z "${SAS_COMFYUI_033_TARBALL:-}" ] || places=("$SAS_COMFYUI_033_TARBALL")
  tarball=""
  for place in "${places[@]}"; do
    if [ -f "$place" ]; then
      tarball="$place"
      break
    fi
  done
  if [ -z "$tarball" ]; then
    echo "test-comfyui-0.33: no ComfyUI 0.33 tree at $tree, and no $name at:" >&2
    printf 'test-comfyui-0.33:   %s\n' "${places[@]}" >&2
    echo "test-comfyui-0.33: set SAS_COMFYUI_033_TARBALL to its path (a ComfyUI/ folder packed with tar -cJ)." >&2
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
echo "test-comfyui-0.33: ComfyUI 0.33 tree: $tree"

export COMFYUI_PATH="$tree" SAS_VENV="$root/.comfyui/venv-0.33"
SAS_REQUIREMENTS="$root/scripts/requirements-comfyui-0.33.txt" bash "$root/scripts/setup-env.sh"
exec bash "$root/scripts/run-pytest.sh" "$SAS_VENV/bin/python" "$@"
