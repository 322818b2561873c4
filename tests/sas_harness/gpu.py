"""Helpers of the GPU tests (test_gpu.py, test_two_gpus.py)."""
import json
import os

import pytest
import torch

from sage_attention_scope.patches import Session
from sage_attention_scope.patches.backends import Bound
from .models import TINY_FLUX, build


def record(**figures):
    """Appends ``figures`` as a JSON line to $SAS_GPU_RECORD, with the GPUs, torch and sageattention."""
    path = os.environ.get("SAS_GPU_RECORD")
    if path:
        figures.update(gpus=[torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
                       torch=torch.__version__)
        with open(path, "a") as f:
            f.write(json.dumps(figures) + "\n")


def build_tiny_flux_d128(device="cuda:0"):
    """A tiny FLUX.1 with two heads of 128 (a head size every kernel takes), 2 + 2 blocks, bf16."""
    import comfy.supported_models
    config = dict(TINY_FLUX, hidden_size=256, depth=2, depth_single_blocks=2, axes_dim=[16, 56, 56])
    return build(comfy.supported_models.Flux, config, dtype=torch.bfloat16, device=torch.device(device))


def kernel_on(session: Session, device: str, choice: str = "auto") -> Bound:
    """The kernel ``choice`` binds on ``device``; the test skips, saying why, where there is none."""
    res = session.knowledge.kernel(choice, torch.device(device))
    if res.bound is None:
        pytest.skip(f"no kernel {choice} on {device}: {res.why}")
    return res.bound
