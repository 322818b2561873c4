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


# Tiny configs of the other families, shaped like ComfyUI's model_detection output.
TINY_FLUX2 = dict(image_model="flux2", in_channels=128, out_channels=128, vec_in_dim=None, context_in_dim=32,
                  hidden_size=64, mlp_ratio=3.0, num_heads=2, depth=1, depth_single_blocks=1, axes_dim=[8, 8, 8, 8],
                  theta=2000, patch_size=1, qkv_bias=False, ops_bias=False, global_modulation=True,
                  mlp_silu_act=True, guidance_embed=True)
FLUX2_MIN_TEXT_TOKENS = 512  # comfy.model_base.Flux2 pads the text to this many tokens
TINY_QWEN_IMAGE = dict(image_model="qwen_image", patch_size=2, in_channels=64, out_channels=16, num_layers=2,
                       attention_head_dim=32, num_attention_heads=2, joint_attention_dim=32, axes_dims_rope=(8, 12, 12))
TINY_Z_IMAGE = dict(image_model="lumina2", patch_size=2, in_channels=16, dim=256, n_layers=2, n_refiner_layers=1,
                    n_heads=4, n_kv_heads=4, multiple_of=16, ffn_dim_multiplier=8 / 3, qk_norm=True, cap_feat_dim=32,
                    axes_dims=[16, 24, 24], axes_lens=[64, 32, 32], rope_theta=256.0, z_image_modulation=True,
                    time_scale=1000.0)
TINY_LTXV = dict(image_model="ltxv", in_channels=128, cross_attention_dim=64, attention_head_dim=32,
                 num_attention_heads=2, caption_channels=32, num_layers=2)
# LTX-2 (19B) as ComfyUI 0.33's model_detection builds it: the state dict gives num_layers,
# attention_head_dim, cross_attention_dim and use_keyframes_abs_pos_embedding, the checkpoint's
# metadata "config" the rest. Shrunk to 2 blocks of 2 heads per stream at the released head sizes
# (video 128, audio 64); the text side (caption_channels 3840 = the connectors' 30 heads x 128) to
# 32 = 2 x 16. The text encoder hands the model unprocessed embeddings of the prompt's own tokens
# (no padding, no mask); the model's connectors, run on them once before the steps, append learned
# registers up to 1024 tokens, so every text cross-attention call has LTXAV_TEXT_KEYS keys.
TINY_LTXAV = dict(image_model="ltxav", num_layers=2, attention_head_dim=128, cross_attention_dim=256,
                  use_keyframes_abs_pos_embedding=False, in_channels=128, audio_in_channels=128,
                  num_attention_heads=2, audio_num_attention_heads=2, audio_attention_head_dim=64,
                  audio_cross_attention_dim=128, caption_channels=32, connector_num_attention_heads=2,
                  connector_attention_head_dim=16, connector_num_layers=2, rope_type="split",
                  frequencies_precision="float64", causal_temporal_positioning=True,
                  av_ca_timestep_scale_multiplier=1000.0)
# LTX-2.3 (22B): its metadata adds gated attention (blocks and connectors), adaLN-modulated text
# cross-attention, middle-of-token positions, and projects the text before the connectors: the dual
# projection of its text encoder already gives each stream its own width (video 4096 + audio 2048),
# so the connectors run at the streams' widths (32 x 128 and 32 x 64; here 2 x 128 and 2 x 64), 8
# layers deep. Its blocks make the same calls as LTX-2's, with the same transformer_options.
LTXAV_23 = dict(TINY_LTXAV, connector_num_attention_heads=2, connector_attention_head_dim=128,
                audio_connector_num_attention_heads=2, audio_connector_attention_head_dim=64, connector_num_layers=8,
                apply_gated_attention=True, connector_apply_gated_attention=True, cross_attention_adaln=True,
                caption_proj_before_connector=True, caption_projection_first_linear=False,
                use_middle_indices_grid=True)
LTXAV_AUDIO_CHANNELS, LTXAV_AUDIO_BINS = 8, 16  # fixed in LTXAVModel: 8 x 16 = audio_in_channels
LTXAV_TEXT_KEYS = 1024  # the connectors' output: the prompt, then registers up to 1024 tokens
LTXAV_SCALE_FACTORS = (8, 32, 32)  # the LTX video VAE's time, height and width factors (vae_scale_factors)
# A UNet with two levels; one transformer block per input/middle/output block that has one.
TINY_UNET = dict(use_checkpoint=False, image_size=32, in_channels=4, out_channels=4, model_channels=64,
                 num_res_blocks=[1, 1], channel_mult=[1, 2], transformer_depth=[1, 1],
                 transformer_depth_output=[1, 1, 1, 1], transformer_depth_middle=1, use_spatial_transformer=True,
                 legacy=False, use_temporal_resblock=False, use_temporal_attention=False,
                 use_linear_in_transformer=True, num_head_channels=64, context_dim=32)
TINY_SDXL = dict(TINY_UNET, num_classes="sequential", adm_in_channels=32 + 6 * 256)  # pooled + 6 size embeddings
TINY_SD15 = dict(TINY_UNET, adm_in_channels=None, use_linear_in_transformer=False)


def _flux_keys_of_this_comfyui() -> None:
    """Newer ComfyUI (0.8+) made FluxParams.txt_ids_dims required; model_detection sets it to
    [] for FLUX.1 and [3] for FLUX.2. Add it only where this ComfyUI's FluxParams has it."""
    import dataclasses

    import comfy.ldm.flux.model
    if "txt_ids_dims" in {f.name for f in dataclasses.fields(comfy.ldm.flux.model.FluxParams)}:
        TINY_FLUX.setdefault("txt_ids_dims", [])
        TINY_FLUX2.setdefault("txt_ids_dims", [3])


_flux_keys_of_this_comfyui()


def build(supported_cls, unet_config: dict, dtype=torch.float32, seed: int = 0, device=None, std=0.2,
          manual_cast=None, operations=None, state_dict=None):
    """A ModelPatcher around a random-weight model of ``supported_cls`` (e.g. supported_models.Flux).
    ``dtype`` is the weights' dtype; ``manual_cast`` the compute dtype when it differs, as ComfyUI
    sets it for fp8 weights (UNETLoader's weight_dtype); ``operations`` replaces ComfyUI's layer
    classes the way a loader's ``custom_operations`` model option does (ComfyUI-GGUF); ``state_dict`` holds
    weights get_model loads besides the diffusion model's (Stable Audio's seconds conditioners)."""
    torch.manual_seed(seed)
    config = supported_cls(dict(unet_config))
    # a tiny config's own values win over those the class fixes in unet_extra_config (Ideogram4 fixes its
    # released widths there: 18 heads of 256, text features 53248); keys it leaves out keep the class's
    config.unet_config.update({k: v for k, v in unet_config.items() if k in supported_cls.unet_extra_config})
    config.set_inference_dtype(dtype, manual_cast)
    if operations is not None:
        config.custom_operations = operations
    device = torch.device(device or comfy.model_management.get_torch_device())
    # On a GPU the weights are made there, in their dtype (a 20B model in seconds, no CPU copy); ComfyUI's
    # layers skip their own initialisation. On the CPU they are drawn in fp32 and cast, as the tests expect.
    model = config.get_model(state_dict or {}, device=device if device.type == "cuda" else None)
    with torch.no_grad():
        for p in model.parameters():
            if device.type == "cuda" and p.device == device and p.dtype.is_floating_point and p.element_size() > 1:
                p.normal_(0, std)
            else:  # fp8 has no normal_
                p.copy_(torch.empty(p.shape, device=p.device).normal_(0, std))
    return comfy.model_patcher.ModelPatcher(model, load_device=device,
                                            offload_device=comfy.model_management.unet_offload_device())


def tiny_flux(**overrides):
    return build(comfy.supported_models.Flux, {**TINY_FLUX, **overrides})


def flux_conditioning(batch=1, tokens=TINY_FLUX_TXT_TOKENS, seed=1, context_dim=32, pooled_dim=32):
    g = torch.Generator().manual_seed(seed)
    return [[torch.randn(batch, tokens, context_dim, generator=g),
             {"pooled_output": torch.randn(batch, pooled_dim, generator=g), "guidance": 3.5}]]


def text_conditioning(tokens=5, dim=32, seed=1, **extra):
    """[[context, extras]] as a text encoder node gives it; tensors in ``extra`` pass as they are."""
    g = torch.Generator().manual_seed(seed)
    return [[torch.randn(1, tokens, dim, generator=g), dict(extra)]]


def flat_latent(latent: torch.Tensor) -> torch.Tensor:
    """A nested latent (LTX-2's video + audio) as one flat tensor; any other as it is."""
    if getattr(latent, "is_nested", False):
        return torch.cat([t.flatten() for t in latent.unbind()])
    return latent


def sample(model_patcher, positive, negative=None, *, latent_hw=(8, 8), channels=16, steps=1, cfg=1.0,
           seed=0, sampler="euler", scheduler="simple", latent=None, noise=None, **extra):
    """``latent_hw`` is (H, W), or (frames, H, W) for video latents; ``latent`` (e.g. LTX-2's
    nested video + audio latent) replaces the zero latent they describe; ``noise`` replaces the
    seed's (ComfyUI draws it from torch's global generator, which threads sampling at once share);
    ``extra`` goes to comfy.sample.sample (start_step, last_step, callback, ...)."""
    if latent is None:
        latent = torch.zeros(1, channels, *latent_hw)
    if noise is None:
        noise = comfy.sample.prepare_noise(latent, seed)
    return comfy.sample.sample(model_patcher, noise, steps, cfg, sampler, scheduler, positive,
                               negative if negative is not None else positive, latent, seed=seed,
                               disable_pbar=True, **extra)
