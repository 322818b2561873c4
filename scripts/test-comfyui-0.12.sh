#!/usr/bin/env bash
# Runs the suite against ComfyUI 0.12.1 - the pip-installable tree of
# hiddenswitch/pip-and-uv-installable-ComfyUI, which has LTX-2's comfy/ldm/lightricks/av_model.py
# that CI's ComfyUI 0.3.75 lacks - in its own venv (.comfyui/venv-0.12). Local runs only: the
# tree goes to .comfyui/comfyui-0.12 (git-ignored), never into the repository.
#
# SAS_COMFYUI_012_SRC: a checkout of that repository, or its bare git directory; without it the
# repository is cloned (network) at the commit the suite passed on. Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
commit=87606c5f
tree="$root/.comfyui/comfyui-0.12"
venv="$root/.comfyui/venv-0.12"
parts=(comfy comfy_api comfy_execution comfy_extras comfy_config comfy_compatibility pyproject.toml)

if [ ! -f "$tree/comfy/model_patcher.py" ]; then
  src="${SAS_COMFYUI_012_SRC:-}"
  tmp=""
  if [ -z "$src" ]; then
    tmp="$(mktemp -d)"
    git clone -q --filter=blob:none --no-checkout https://github.com/hiddenswitch/pip-and-uv-installable-ComfyUI "$tmp/repo"
    src="$tmp/repo/.git"
  fi
  mkdir -p "$tree"
  if [ -d "$src/comfy" ]; then
    for part in "${parts[@]}"; do cp -r "$src/$part" "$tree/"; done
  else
    # A git directory: write the files of the pinned commit (or HEAD of a mirror), skipping
    # blobs a partial copy lacks (large tokenizer data the suite never reads).
    rev=$(git --git-dir="$src" rev-parse -q --verify "$commit^{commit}" || git --git-dir="$src" rev-parse HEAD)
    git --git-dir="$src" ls-tree -r "$rev" -- "${parts[@]}" | while read -r _ type sha path; do
      [ "$type" = blob ] || continue
      mkdir -p "$tree/$(dirname "$path")"
      git --git-dir="$src" cat-file blob "$sha" > "$tree/$path" 2>/dev/null || rm -f "$tree/$path"
    done
  fi
  [ -z "$tmp" ] || rm -rf "$tmp"
fi

stamp="$venv/.sas-setup-$(cksum < "$root/scripts/requirements-comfyui-0.12.txt" | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q "torch==${SAS_TORCH:-2.14.1}" "torchvision==${SAS_TORCHVISION:-0.29.1}"
  "$venv/bin/python" -m pip install -q -r "$root/scripts/requirements-comfyui-0.12.txt"
  touch "$stamp"
fi

COMFYUI_PATH="$tree" exec bash "$root/scripts/run-pytest.sh" "$venv/bin/python" "$@"
