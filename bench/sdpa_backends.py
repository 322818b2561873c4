"""Per call: PyTorch SDPA under each backend priority ComfyUI uses, beside SageAttention 2, at the shapes
that matter. ComfyUI 0.33 on a CUDA GPU runs every SDPA call under sdpa_kernel([FLASH_ATTENTION,
CUDNN_ATTENTION, EFFICIENT_ATTENTION, MATH], set_priority=True) (comfy/ops.py); 0.3.75 on Linux leaves
torch's own choice. The no-node arm of a per-step run is whichever the host picks, so the Scope's gain
differs between hosts on one GPU: this shows by how much.

    python bench/sdpa_backends.py [--repeats 20]
"""
from __future__ import annotations

import argparse
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = {  # (batch, heads, tokens, head size)
    "FLUX.1 1024²": (1, 24, 4608, 128), "FLUX.1 2048²": (1, 24, 16896, 128), "Wan 2.1 14B 480p": (1, 40, 32760, 128)}
PRIORITIES = {
    "torch's own choice (ComfyUI 0.3.75 on Linux)": None,
    "ComfyUI 0.33: flash first": [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION,
                                  SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH],
    "cuDNN only": [SDPBackend.CUDNN_ATTENTION],
}


def timed_ms(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    try:
        from sageattention import sageattn_qk_int8_pv_fp8_cuda_sm90 as sage2
    except ImportError:
        sage2 = None
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, bf16, median of {args.repeats} calls")
    print("| shape | arm | ms | TFLOP/s | × torch's own choice |\n|---|---|---|---|---|")
    for name, (b, h, n, d) in SHAPES.items():
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        arms = {}
        for label, priority in PRIORITIES.items():
            def run(priority=priority):
                if priority is None:
                    return F.scaled_dot_product_attention(q, k, v)
                with sdpa_kernel(priority, set_priority=True):
                    return F.scaled_dot_product_attention(q, k, v)
            arms[label] = timed_ms(run, args.repeats)
        if sage2 is not None:
            arms["SageAttention 2.2 (sm90, FP8 P·V)"] = timed_ms(
                lambda: sage2(q, k, v, tensor_layout="HND", pv_accum_dtype="fp32+fp32"), args.repeats)
        base = arms[next(iter(PRIORITIES))]
        for label, ms in arms.items():
            print(f"| {name} | {label} | {ms:.3f} | {4 * b * h * n * n * d / ms / 1e9:.0f} | {base / ms:.3f} |")


if __name__ == "__main__":
    main()
