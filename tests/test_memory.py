"""Memory management alongside the scope: ComfyUI's --gpu-only and GGUF-style custom operations
(CPU, kernel test double). The fp8-weight and partially loaded (lowvram) paths run on the GPU
(tests/test_gpu.py)."""
import pytest
import torch
import torch.nn.functional as F

import comfy.model_management
import comfy.ops
import comfy.supported_models

from sage_attention_scope.patches import Settings, apply_scope
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.models import TINY_FLUX, build, flux_conditioning, sample
from sas_harness.run import last_generation

CALLS_PER_STEP = TINY_FLUX["depth"] + TINY_FLUX["depth_single_blocks"]
SCOPED = Settings(kernel="double", min_seq_len=1)


class DequantizingOps(comfy.ops.disable_weight_init):
    """Layer classes in the style ComfyUI-GGUF hands ComfyUI as ``custom_operations``: each
    Linear keeps its weight in a storage format (int8 with a scale per row) and dequantizes it
    in every forward, so what reaches attention are ordinary activations."""

    class Linear(torch.nn.Module):
        def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.empty(out_features, in_features, device=device),
                                             requires_grad=False)
            self.bias = (torch.nn.Parameter(torch.empty(out_features, device=device), requires_grad=False)
                         if bias else None)

        def forward(self, x):
            scale = self.weight.abs().amax(dim=1, keepdim=True).clamp_min(1e-8) / 127
            stored = torch.round(self.weight / scale).to(torch.int8)
            weight = stored.to(x.dtype) * scale.to(x.dtype)
            return F.linear(x, weight, None if self.bias is None else self.bias.to(x.dtype))


def test_gguf_style_custom_operations_route_like_comfyuis_own_layers(session):
    model = build(comfy.supported_models.Flux, TINY_FLUX, operations=DequantizingOps)
    assert isinstance(model.model.diffusion_model.img_in, DequantizingOps.Linear)
    plain = sample(model, flux_conditioning())
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        routed = sample(apply_scope(model, SCOPED, session), flux_conditioning())
    assert last_generation(session)["kernel"] == CALLS_PER_STEP == len(kernel.calls)
    assert all(call["q"].is_floating_point() for call in kernel.calls)  # activations, not the int8 storage
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


@pytest.fixture
def gpu_only(monkeypatch):
    """What --gpu-only sets: the argument, and HIGH_VRAM, so models are never offloaded. Set and
    restored by hand: ComfyUI 0.12's pip-installable tree keeps its options in a dict that
    monkeypatch cannot delete from."""
    args = comfy.model_management.args
    before = getattr(args, "gpu_only")
    args.gpu_only = True
    monkeypatch.setattr(comfy.model_management, "vram_state", comfy.model_management.VRAMState.HIGH_VRAM)
    yield
    args.gpu_only = before


def test_gpu_only_keeps_everything_on_the_torch_device_and_routes_alike(session, gpu_only):
    device = comfy.model_management.get_torch_device()
    assert comfy.model_management.unet_offload_device() == device == comfy.model_management.intermediate_device()
    model = build(comfy.supported_models.Flux, TINY_FLUX)
    assert model.offload_device == device
    plain = sample(model, flux_conditioning())
    with registered(session, make_kernel("double", RecordingKernel())):
        routed = sample(apply_scope(model, SCOPED, session), flux_conditioning())
    assert last_generation(session, str(device))["kernel"] == CALLS_PER_STEP
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)
