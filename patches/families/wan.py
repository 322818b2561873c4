"""Wan 2.1 and 2.2 (every config class a ``WAN21_T2V`` subclass): T2V, I2V, first-last-frame, Fun
Control, Camera, VACE, HuMo, S2V, Animate, and newer ComfyUI's (0.33 read) CausalAR, FlowRVS, SCAIL,
SCAIL-2, WanDancer and Animate 2. Per block, head size 128: self-attention over the video tokens (SCAIL
adds its reference frame and half-size pose tokens; Animate 2 runs a pose branch, then one call per
frame: all frames' keys and one pose frame's), cross-attention to the text (UMT5, padded to 512 tokens,
never masked) and, where the model takes an image, to its CLIP tokens first (257 keys an image; two
images, first-last-frame and WanDancer, 514). Newer ComfyUI (0.33 read) makes every CLIP call with
low_precision_attention=False; an image-taking model run without a CLIP image attends there to the
whole text. HuMo attends each latent frame to its 16 audio tokens.

Made without transformer_options, so they never reach the Scope: S2V's blocks on ComfyUI 0.3.75 (its
block loop passes none; 0.8.0 on pass them), S2V's audio injector and WanDancer's music injector and
music encoder, Animate's face adapter, and CausalAR's blocks under its ar_video sampler (under any other
sampler it is a WanModel)."""
from . import TEXT_NONE, Family, register

_WAN = "comfy.ldm.wan.model."

WAN = register(Family(
    name="Wan",
    config_classes=("WAN21_T2V",),  # and its subclasses: WAN21_I2V, WAN21_FunControl2V, WAN21_Camera, WAN22_Camera,
    # WAN21_Vace, WAN21_HuMo, WAN22_S2V, WAN22_Animate, WAN22_T2V (the 5B); newer WAN21_CausalAR_T2V, WAN21_FlowRVS
    # (a WanModel), WAN21_SCAIL, WAN21_SCAIL2, WAN22_WanDancer and WAN_Animate2, each with the model below
    diffusion_models=(_WAN + "WanModel", _WAN + "CameraWanModel", _WAN + "VaceWanModel", _WAN + "HumoWanModel",
                      _WAN + "WanModel_S2V", "comfy.ldm.wan.model_animate.AnimateWanModel",
                      _WAN + "SCAILWanModel", _WAN + "SCAIL2WanModel", "comfy.ldm.wan.model_animate2.WanAnimate2Model",
                      "comfy.ldm.wan.model_wandancer.WanDancerModel", "comfy.ldm.wan.ar_model.CausalWanModel"),
    joint_text=TEXT_NONE,  # the text comes through cross-attention
))
