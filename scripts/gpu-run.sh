#!/usr/bin/env bash
# The GPU issues' runs on the lent H200 (Python 3.12, torch 2.11 + cu130, Triton 3.6; no network
# there). Here, once:
#     bash scripts/gpu-run.sh prepare          # fills .device/ (git-ignored), ~71 MB in all
# then through the device tool, carrying what the mode needs (a call carries at most 64 MiB, and
# PyAV, which ComfyUI's comfy_api imports, comfy-kitchen and SageAttention 2 together are more):
#     bash scripts/gpu-run.sh tests    # GPU tests with SageAttention 2.2 and 1.0.6, per call beside 9decfb4
#                                      #   carry: .device/base .device/sa2 .device/previous.tar.xz
#     bash scripts/gpu-run.sh kitchen  # GPU tests and FLUX.1 per step with comfy-kitchen
#                                      #   carry: .device/base .device/kitchen.tar.xz
#     bash scripts/gpu-run.sh steps    # per step, FLUX.1/Qwen-Image beside 9decfb4, 1.0.6, Wan 2.1 14B
#                                      #   carry: .device/base .device/sa2 .device/previous.tar.xz
#     bash scripts/gpu-run.sh video    # video and the new DiT families    carry: .device/base .device/sa2
# and on ComfyUI 0.33 (its tree, comfy-kitchen 0.2.31 with its CUDA RoPE, comfy-aimdo; bash scripts/gpu-run.sh
# prepare-0.33 fills .device/c033, ~52 MB, xz -9e so that it fits one call beside SageAttention 2):
#     bash scripts/gpu-run.sh images-0.33  # GPU tests, family accuracy, FLUX.1 and Krea 2 per step
#     bash scripts/gpu-run.sh video-0.33   # Kandinsky 5, CogVideoX and LTX-2 per step
#     bash scripts/gpu-run.sh new-0.33     # the families 0.33 added: accuracy, then Krea 2, Kandinsky 5,
#                                          #   CogVideoX and LTX-2 per step (one call; SAS_STEP_S caps each)
#     bash scripts/gpu-run.sh hosts        # SDPA per backend priority beside SA2, the GPU tests (recorded), and
#                                          #   FLUX.1 2048² per step on ComfyUI 0.3.75 on the same machine
#                                          #   carry: .device/c033 .device/sa2 .device/c075 (0.3.75's tree:
#                                          #   tar -C .comfyui -cJf .device/c075/comfyui.tar.xz ComfyUI)
#                                          #   carry: .device/c033 .device/sa2
#     bash scripts/gpu-run.sh present-0.33 # the GPU suite with SageAttention 2.2 and 1.0.6, per call beside $previous
#                                          #   (.device/previous.tar.xz), then SAS_STEPS / SAS_WHOLE as below
#                                          #   carry: .device/c033 .device/sa2 .device/previous.tar.xz
#     bash scripts/gpu-run.sh kitchen-0.2.40  # ComfyUI 0.3.75 + comfy-kitchen 0.2.40: GPU tests with kitchen_int8
#                                      #   and with sageattention 1.0.6, FLUX.1 1024²/2048² per step on the kitchen
#                                      #   carry: .device/k040 (av.tar.xz, kitchen.tar.xz, torchsde, trampoline and
#                                      #   sageattention 1.0.6 wheels) .device/c075
#     bash scripts/gpu-run.sh steps-0.33   # per step, one process per model of SAS_STEPS (NAME@SIZE, comma-separated;
#     bash scripts/gpu-run.sh whole-0.33   #   each capped at SAS_STEP_S), then whole SAS_WHOLE_STEPS-step (20)
#                                          #   generations, no node vs Scope, per model of SAS_WHOLE on 0.33 and of
#                                          #   SAS_WHOLE_075 on 0.3.75 where .device/c075 came; the two modes are one,
#                                          #   named for the archive. SAS_DEADLINE=$(( $(date +%s) + 560 )) ends every
#                                          #   step in time for the archive. carry: .device/c033 .device/sa2 [.device/c075]
# (base: PyAV, torchsde, trampoline, sageattention 1.0.6 and the ComfyUI tree.) Each writes its logs
# and tables under $OUT (default .artifacts/gpu) as one tar.xz (the device tool brings back at most
# 8 files) and prints a summary last. Every step's output is kept; a failed step is reported and
# the run goes on, so one call brings back everything it could measure.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mode="${1:-}"
previous="${SAS_PREVIOUS:-9decfb4}"
dev="$root/.device"

prepare() {
  set -e
  mkdir -p "$dev/base" "$dev/sa2"
  py="${SAS_VENV:-$root/.venv}/bin/python"
  tmp="$(mktemp -d)"
  get() { "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d "$@"; }
  # sageattention 1.0.6 (pure Python, Triton) and ComfyUI's two needs the image lacks.
  get "$dev/base" sageattention==1.0.6 torchsde==0.2.6 trampoline==0.1.2
  # PyAV (ComfyUI's comfy_api imports it; the image lacks it): its 35 MB wheel is 25 MB as tar.xz.
  get "$tmp" av==19.0.2
  "$py" -m zipfile -e "$tmp"/av-*.whl "$tmp/av"
  tar -C "$tmp/av" -cJf "$dev/base/av.tar.xz" .
  # The ComfyUI 0.3.75 tree the tests use.
  tar -C "$root/.comfyui" --exclude=__pycache__ --exclude=.git -cJf "$dev/base/comfyui.tar.xz" ComfyUI
  # SageAttention 2.2 built for torch 2.11.0+cu130, Python 3.12, sm90 (the shared wheels folder).
  cp "${SAS_SA2_WHEEL:-$root/../shared/wheels/sageattention-2.2.0-cp312-cp312-linux_x86_64.whl}" "$dev/sa2/"
  # comfy-kitchen 0.2.40 unpacked without its ROCm backend (the wheel is 67 MB; this is ~34 MB).
  get "$tmp" comfy-kitchen==0.2.40
  "$py" -m zipfile -e "$tmp"/comfy_kitchen-*.whl "$tmp/kitchen"
  rm -rf "$tmp/kitchen/comfy_kitchen/backends/hip"
  tar -C "$tmp/kitchen" -cJf "$dev/kitchen.tar.xz" .
  # The previous commit's tree for --compare.
  git -C "$root" archive --format=tar "$previous" | xz > "$dev/previous.tar.xz"
  rm -rf "$tmp"
  du -sh "$dev"/*
}

# ComfyUI 0.33's run: its tree, what it imports that the GPU image lacks (PyAV, comfy-kitchen 0.2.31 without
# its ROCm backend, comfy-aimdo, blake3, simpleeval, torchsde, trampoline) and sageattention 1.0.6.
prepare_033() {
  set -e
  local part="$dev/c033" tree="$root/.comfyui/comfyui-0.33"
  [ -f "$tree/comfy/model_patcher.py" ] || bash "$root/scripts/test-comfyui-0.33.sh" --collect-only -q >/dev/null
  mkdir -p "$part" "$dev/sa2"
  py="${SAS_VENV:-$root/.venv}/bin/python"
  tmp="$(mktemp -d)"
  get() { "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d "$@"; }
  get "$part" sageattention==1.0.6 torchsde==0.2.6 trampoline==0.1.2 comfy-aimdo==0.4.13 blake3==1.0.11 \
    simpleeval==1.0.8
  get "$tmp" av==19.0.2 comfy-kitchen==0.2.31
  "$py" -m zipfile -e "$tmp"/av-*.whl "$tmp/av"
  "$py" -m zipfile -e "$tmp"/comfy_kitchen-*.whl "$tmp/kitchen"
  rm -rf "$tmp/kitchen/comfy_kitchen/backends/hip"
  tar -C "$tmp/av" -cf - . | xz -9e -T2 > "$part/av.tar.xz"
  tar -C "$tmp/kitchen" -cf - . | xz -9e -T2 > "$part/kitchen.tar.xz"
  tar -C "$root/.comfyui" --exclude=__pycache__ -cf - comfyui-0.33 | xz -9e -T2 > "$part/comfyui.tar.xz"
  cp "${SAS_SA2_WHEEL:-$root/../shared/wheels/sageattention-2.2.0-cp312-cp312-linux_x86_64.whl}" "$dev/sa2/"
  rm -rf "$tmp"
  du -sh "$part"/* "$dev/sa2"
}

unpack_033() {
  local part="$dev/c033" want
  # a warm machine keeps /tmp between calls: unpacked by an earlier call of this session, still whole
  [ -f /tmp/.sas-unpacked-033 ] && PYTHONPATH=/tmp/site:/tmp/kitchen python3 -c 'import av, comfy_kitchen' 2>/dev/null \
    && grep -q '0.33.0' /tmp/comfyui-0.33/comfyui_version.py && { echo "unpacked already (warm machine)"; return 0; }
  for want in av.tar.xz kitchen.tar.xz comfyui.tar.xz; do
    [ -f "$part/$want" ] || { echo "missing $part/$want"; return 1; }
  done
  rm -rf /tmp/site /tmp/kitchen /tmp/sa1 /tmp/sa2 /tmp/comfyui-0.33 /tmp/.sas-unpacked-*
  mkdir -p /tmp/site /tmp/kitchen /tmp/none
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    "$part"/torchsde-*.whl "$part"/trampoline-*.whl "$part"/comfy_aimdo-*.whl "$part"/blake3-*.whl \
    "$part"/simpleeval-*.whl || return 1
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/sa1 \
    "$part"/sageattention-1.0.6-*.whl || return 1
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/sa2 "$dev"/sa2/*.whl \
    || return 1
  tar -C /tmp/site -xJf "$part/av.tar.xz" && tar -C /tmp/kitchen -xJf "$part/kitchen.tar.xz" \
    && tar -C /tmp -xJf "$part/comfyui.tar.xz" || return 1
  # Arrived whole: each package imports, and the tree is the one the tests ran on.
  PYTHONPATH=/tmp/site:/tmp/kitchen python3 -c 'import av, comfy_kitchen, comfy_aimdo, blake3, simpleeval' || return 1
  grep -q '0.33.0' /tmp/comfyui-0.33/comfyui_version.py || return 1
  touch /tmp/.sas-unpacked-033
}

# ComfyUI 0.3.75 with comfy-kitchen 0.2.40 (no ROCm backend) and sageattention 1.0.6: .device/k040 + .device/c075.
unpack_k040() {
  local part="$dev/k040" want
  for want in av.tar.xz kitchen.tar.xz; do
    [ -f "$part/$want" ] || { echo "missing $part/$want"; return 1; }
  done
  [ -f "$dev/c075/comfyui.tar.xz" ] || { echo "missing $dev/c075/comfyui.tar.xz"; return 1; }
  rm -rf /tmp/site /tmp/kitchen /tmp/sa1 /tmp/ComfyUI /tmp/.sas-unpacked-*
  mkdir -p /tmp/site /tmp/kitchen /tmp/none
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    "$part"/torchsde-*.whl "$part"/trampoline-*.whl || return 1
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/sa1 \
    "$part"/sageattention-1.0.6-*.whl || return 1
  tar -C /tmp/site -xJf "$part/av.tar.xz" && tar -C /tmp/kitchen -xJf "$part/kitchen.tar.xz" \
    && tar -C /tmp -xJf "$dev/c075/comfyui.tar.xz" || return 1
  # Arrived whole: each package imports with its version, and the tree is 0.3.75.
  PYTHONPATH=/tmp/site:/tmp/kitchen python3 -c 'import av, torchsde, comfy_kitchen, importlib.metadata as m
assert m.version("comfy_kitchen") == "0.2.40", m.version("comfy_kitchen")' || return 1
  PYTHONPATH=/tmp/sa1 python3 -c 'import importlib.metadata as m; assert m.version("sageattention") == "1.0.6"' \
    || return 1
  grep -q '0.3.75' /tmp/ComfyUI/comfyui_version.py || return 1
}

# On the device machine: what was carried into /tmp. Two kernel sites that never meet (both
# libraries are the module sageattention); comfy-kitchen, SageAttention 2 and the previous tree
# only where carried.
unpack() {
  mkdir -p /tmp/site /tmp/kitchen /tmp/previous /tmp/none
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    "$dev"/base/torchsde-*.whl "$dev"/base/trampoline-*.whl || return 1
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/sa1 \
    "$dev"/base/sageattention-1.0.6-*.whl || return 1
  tar -C /tmp/site -xJf "$dev/base/av.tar.xz" && tar -C /tmp -xJf "$dev/base/comfyui.tar.xz" || return 1
  if [ -d "$dev/sa2" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/sa2 "$dev"/sa2/*.whl || return 1
  fi
  if [ -f "$dev/kitchen.tar.xz" ]; then tar -C /tmp/kitchen -xJf "$dev/kitchen.tar.xz" || return 1; fi
  if [ -f "$dev/previous.tar.xz" ]; then tar -C /tmp/previous -xJf "$dev/previous.tar.xz" || return 1; fi
}

out="${OUT:-$root/.artifacts/gpu}"
logs="$out/logs"
summary=()

# step NAME SITE COMMAND...: runs COMMAND with SITE's kernel library on the path, its output in
# logs/NAME.log, for at most SAS_STEP_S seconds (a call has 10 minutes: the archive must still be
# written) and, where SAS_DEADLINE (epoch seconds) is set, never past 20 s before it (a step with
# under 30 s left is skipped and said so); the summary keeps its exit status (124: cut off) and last line.
step() {
  local name="$1" site="$2" limit="${SAS_STEP_S:-3600}"
  shift 2
  if [ -n "${SAS_DEADLINE:-}" ]; then
    local left=$(( SAS_DEADLINE - $(date +%s) - 20 ))
    if [ "$left" -lt 30 ]; then
      summary+=("$name: not run, ${left} s left before SAS_DEADLINE")
      return
    fi
    [ "$left" -lt "$limit" ] && limit="$left"
  fi
  echo "== $name (at most $limit s)" >&2
  PYTHONPATH="/tmp/$site:/tmp/site:/tmp/kitchen:$root/tests:${PYTHONPATH:-}" COMFYUI_PATH="${COMFYUI_PATH:-/tmp/ComfyUI}" \
    PYTHONUNBUFFERED=1 timeout "$limit" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  summary+=("$name: exit $rc; $(tail -n 1 "$logs/$name.log")")
}

machine() {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
}

# per_model PREFIX SITE LIST ARGS...: bench/model_steps.py once per model of the comma-separated LIST
# (NAME@SIZE for one image size), each in its own process and step, so SAS_STEP_S caps each model
# and one slow model cannot take the others' time; tables in logs/PREFIX-N/.
per_model() {
  local prefix="$1" site="$2" list="$3" i=0 one
  shift 3
  IFS=, read -r -a models <<< "$list"
  for one in "${models[@]}"; do
    i=$((i + 1))
    step "$prefix-$i" "$site" python3 bench/model_steps.py --depth full --family "$one" "$@" --out "$logs/$prefix-$i"
  done
}

finish() {
  tar -C "$out" -cJf "$out/gpu-run-$mode.tar.xz" logs
  rm -rf "$logs"
  printf '%s\n' "$(machine)" "${summary[@]}"
}

case "$mode" in
  prepare)
    prepare ;;
  prepare-0.33)
    prepare_033 ;;
  images-0.33|video-0.33|new-0.33|hosts|steps-0.33|whole-0.33|present-0.33)
    mkdir -p "$logs"
    unpack_033 || { echo "unpacking the carried packages failed: were .device/c033 and .device/sa2 carried? (bash scripts/gpu-run.sh prepare-0.33)"; exit 1; }
    machine > "$logs/machine.txt"
    export COMFYUI_PATH=/tmp/comfyui-0.33
  ;;&
  images-0.33)
    step gpu-tests-sa2 sa2 python3 -m pytest -m gpu -q -rs tests/test_gpu.py
    # SAS_ACCURACY / SAS_STEPS: comma-separated families (NAME@SIZE for one image size) instead of the defaults
    IFS=, read -r -a accuracy <<< "${SAS_ACCURACY:-}"
    step accuracy sa2 python3 bench/family_accuracy.py --out "$logs/accuracy" ${accuracy[@]+--family "${accuracy[@]}"}
    IFS=, read -r -a models <<< "${SAS_STEPS:-FLUX.1@2048,Krea 2@1024,Krea 2@2048}"
    step steps-images sa2 python3 bench/model_steps.py --depth full --rounds 2 --steps 4 --family "${models[@]}" \
      --out "$logs/steps-images"
  ;;&
  video-0.33)
    IFS=, read -r -a models <<< "${SAS_STEPS:-Kandinsky 5,CogVideoX,LTX-2}"
    step steps-video sa2 python3 bench/model_steps.py --depth full --rounds 2 --steps 4 --family "${models[@]}" \
      --out "$logs/steps-video"
  ;;&
  new-0.33)
    IFS=, read -r -a accuracy <<< "${SAS_ACCURACY:-Krea 2,Kandinsky 5,CogVideoX,LTX-2}"
    SAS_STEP_S="${SAS_ACCURACY_S:-150}" step accuracy sa2 python3 bench/family_accuracy.py --out "$logs/accuracy" \
      --family "${accuracy[@]}"
    IFS=, read -r -a models <<< "${SAS_STEPS:-Krea 2@1024,Krea 2@2048,Kandinsky 5,CogVideoX,LTX-2}"
    step steps-new sa2 python3 bench/model_steps.py --depth full --rounds 2 --steps 4 --family "${models[@]}" \
      --out "$logs/steps-new"
  ;;&
  hosts)
    tar -C /tmp -xJf "$dev/c075/comfyui.tar.xz" || { echo "missing $dev/c075/comfyui.tar.xz"; exit 1; }
    step sdpa-backends sa2 python3 bench/sdpa_backends.py
    SAS_GPU_RECORD="$logs/gpu-record.jsonl" step gpu-tests-sa2 sa2 python3 -m pytest -m gpu -q -rs tests/test_gpu.py
    COMFYUI_PATH=/tmp/ComfyUI step steps-flux-0.3.75 sa2 python3 bench/model_steps.py --depth full --rounds 2 \
      --steps 4 --family FLUX.1@2048 --out "$logs/steps-flux-0.3.75"
  ;;&
  present-0.33)
    # The present engine on 0.33: the GPU suite with SageAttention 2.2 and 1.0.6, then per call beside
    # $previous where .device/previous.tar.xz came (git archive $previous | xz > .device/previous.tar.xz),
    # then the models of SAS_STEPS and SAS_WHOLE as steps-0.33 runs them.
    SAS_STEP_S="${SAS_TESTS_S:-120}" SAS_GPU_RECORD="$logs/gpu-record-sa2.jsonl" \
      step gpu-tests-sa2 sa2 python3 -m pytest -m gpu -q -rs tests/test_gpu.py
    SAS_STEP_S="${SAS_TESTS_S:-120}" SAS_GPU_RECORD="$logs/gpu-record-sa1.jsonl" \
      step gpu-tests-sa1 sa1 python3 -m pytest -m gpu -q -rs tests/test_gpu.py
    if [ -f "$dev/previous.tar.xz" ]; then
      rm -rf /tmp/previous && mkdir -p /tmp/previous && tar -C /tmp/previous -xJf "$dev/previous.tar.xz"
      SAS_STEP_S="${SAS_CALLS_S:-150}" step calls-sa2 sa2 python3 bench/attention_calls.py --compare /tmp/previous \
        --out "$logs/calls-sa2"
    fi
  ;;&
  steps-0.33|whole-0.33|present-0.33)
    # per step for SAS_STEPS, then whole generations for SAS_WHOLE (either may be empty; the mode names the archive)
    [ -z "${SAS_STEPS:-}" ] || per_model steps sa2 "$SAS_STEPS" --rounds 2 --steps 4
    [ -z "${SAS_WHOLE:-}" ] || per_model whole sa2 "$SAS_WHOLE" --whole "${SAS_WHOLE_STEPS:-20}"
    if [ -n "${SAS_WHOLE_075:-}" ] && tar -C /tmp -xJf "$dev/c075/comfyui.tar.xz" 2>/dev/null; then
      COMFYUI_PATH=/tmp/ComfyUI per_model whole-0.3.75 sa2 "$SAS_WHOLE_075" --whole "${SAS_WHOLE_STEPS:-20}"
    fi
  ;;&
  images-0.33|video-0.33|new-0.33|hosts|steps-0.33|whole-0.33|present-0.33)
    finish ;;
  kitchen-0.2.40)
    mkdir -p "$logs"
    unpack_k040 || { echo "unpacking the carried packages failed: were .device/k040 and .device/c075 carried?"; exit 1; }
    machine > "$logs/machine.txt"
    export COMFYUI_PATH=/tmp/ComfyUI
    SAS_STEP_S="${SAS_TESTS_S:-150}" SAS_GPU_RECORD="$logs/gpu-record-kitchen.jsonl" step gpu-tests-kitchen none env SAS_GPU_KERNEL=kitchen_int8 \
      python3 -m pytest -m gpu -q -rs tests/test_gpu.py
    SAS_STEP_S="${SAS_TESTS_S:-150}" SAS_GPU_RECORD="$logs/gpu-record-sa1.jsonl" step gpu-tests-sa1 sa1 python3 -m pytest -m gpu -q -rs tests/test_gpu.py
    step steps-kitchen none python3 bench/model_steps.py --depth full --family FLUX.1 --size 1024 2048 \
      --kernel kitchen_int8 --rounds 2 --steps 4 --out "$logs/steps-kitchen"
    finish ;;
  tests|kitchen|steps|video)
    mkdir -p "$logs"
    unpack || { echo "unpacking the carried packages failed: was .device/base carried? (bash scripts/gpu-run.sh prepare)"; exit 1; }
    machine > "$logs/machine.txt"
  ;;&
  tests)
    for site in sa2 sa1; do
      step "gpu-tests-$site" "$site" python3 -m pytest -m gpu -q -rs tests/test_gpu.py
    done
    step calls-sa2 sa2 python3 bench/attention_calls.py --compare /tmp/previous --out "$logs/calls-sa2"
  ;;&
  kitchen)
    step gpu-tests-kitchen none env SAS_GPU_KERNEL=kitchen_int8 python3 -m pytest -m gpu -q -rs tests/test_gpu.py
    step steps-kitchen none python3 bench/model_steps.py --depth full --family FLUX.1 --size 1024 2048 \
      --kernel kitchen_int8 --out "$logs/steps-kitchen"
  ;;&
  steps)
    step steps-sa2 sa2 python3 bench/model_steps.py --depth full --family FLUX.1 Qwen-Image --size 1024 2048 \
      --compare /tmp/previous --out "$logs/steps-sa2"
    step steps-wan sa2 python3 bench/model_steps.py --depth full --family Wan --out "$logs/steps-wan"
    step steps-sa1 sa1 python3 bench/model_steps.py --depth full --family FLUX.1 --size 1024 2048 --out "$logs/steps-sa1"
  ;;&
  video)
    step steps-video sa2 python3 bench/model_steps.py --depth full \
      --family Wan "Wan 2.2 5B" HunyuanVideo SD3@1024 SD3@2048 Chroma@1024 --out "$logs/steps-video"
    step accuracy sa2 python3 bench/family_accuracy.py --out "$logs/accuracy"
  ;;&
  tests|kitchen|steps|video)
    finish ;;
  *)
    echo "usage: bash scripts/gpu-run.sh prepare|tests|kitchen|steps|video|prepare-0.33|images-0.33|video-0.33|new-0.33|hosts|steps-0.33|whole-0.33|present-0.33|kitchen-0.2.40" >&2
    exit 2 ;;
esac
