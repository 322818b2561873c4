"""Tiny random-weight models built through ComfyUI's own classes, and one-step sampling."""
from __future__ import annotations

import torch

import comfy.model_management
import comfy.model_patcher
import comfy.sample
import comfy.supported_models

TINY_FLUX = dict(image_model="flux", guidance_embed=True, in_channels=16, out_channels=16, vec_in_dim=32,
                 context_in_dim=32, hidden_size=64, mlp_ratio=2.0, num_heads=2, depth=1, depth_single_blocks=1,
                 axes_dim=[8, 12, 12], theta=10000, patch_size=2, qkv_bias=True)
TINY_FLUX_TXT_TOKENS = 5
# Where ComfyUI puts models here: "cpu" in CI, "cuda:0" on the GPU machine.
DEVICE = str(comfy.model_management.get_torch_device())


def build(supported_cls, unet_config: dict, dtype=torch.float32, seed: int = 0, device=None, std=0.2):
    """A ModelPatcher around a random-weight model of ``supported_cls`` (e.g. supported_models.Flux)."""
    torch.manual_seed(seed)
    config = supported_cls(dict(unet_config))
    config.set_inference_dtype(dtype, None)
    model = config.get_model({})
    device = device or comfy.model_management.get_torch_device()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, std)
    return comfy.model_patcher.ModelPatcher(model, load_device=device,
                                            offload_device=comfy.model_management.unet_offload_device())


def tiny_flux(**overrides):
    return build(comfy.supported_models.Flux, {**TINY_FLUX, **overrides})


def flux_conditioning(batch=1, tokens=TINY_FLUX_TXT_TOKENS, seed=1, context_dim=32, pooled_dim=32):
    g = torch.Generator().manual_seed(seed)
    return [[torch.randn(batch, tokens, context_dim, generator=g),
             {"pooled_output": torch.randn(batch, pooled_dim, generator=g), "guidance": 3.5}]]


def sample(model_patcher, positive, negative=None, *, latent_hw=(8, 8), channels=16, steps=1, cfg=1.0,
           seed=0, sampler="euler", scheduler="simple"):
    latent = torch.zeros(1, channels, *latent_hw)
    noise = comfy.sample.prepare_noise(latent, seed)
    return comfy.sample.sample(model_patcher, noise, steps, cfg, sampler, scheduler, positive,
                               negative if negative is not None else positive, latent, seed=seed,
                               disable_pbar=True)
