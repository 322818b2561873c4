"""Wan 2.1 and 2.2, every config class a ``WAN21_T2V`` subclass. Per block, head size 128: self-attention
over the video tokens and cross-attention to the text and, where the model takes an image, to its CLIP
tokens. The text is never in the self-attention calls (TEXT_NONE). Some parts make their calls without
transformer_options and never reach the Scope: the audio and music injectors, Animate's face adapter, and
CausalAR's blocks under its own sampler."""
from . import TEXT_NONE, Family, register

_WAN = "comfy.ldm.wan.model."

WAN = register(Family(
    name="Wan",
    config_classes=("WAN21_T2V",),  # and its subclasses: WAN21_I2V, WAN21_FunControl2V, WAN21_Camera, WAN22_Camera,
    # WAN21_Vace, WAN21_HuMo, WAN22_S2V, WAN22_Animate, WAN22_T2V (the 5B), and those of added_in
    diffusion_models=(_WAN + "WanModel", _WAN + "CameraWanModel", _WAN + "VaceWanModel", _WAN + "HumoWanModel",
                      _WAN + "WanModel_S2V", "comfy.ldm.wan.model_animate.AnimateWanModel",
                      _WAN + "SCAILWanModel", _WAN + "SCAIL2WanModel", "comfy.ldm.wan.model_animate2.WanAnimate2Model",
                      "comfy.ldm.wan.model_wandancer.WanDancerModel", "comfy.ldm.wan.ar_model.CausalWanModel"),
    joint_text=TEXT_NONE,  # the text comes through cross-attention
    added_in={
        "0.15.1": ("WAN21_FlowRVS",),  # a plain WanModel
        "0.16.0": ("WAN21_SCAIL", _WAN + "SCAILWanModel"),
        "0.21.0": ("WAN21_CausalAR_T2V", "comfy.ldm.wan.ar_model.CausalWanModel",
                   "WAN22_WanDancer", "comfy.ldm.wan.model_wandancer.WanDancerModel"),
        "0.25.0": ("WAN21_SCAIL2", _WAN + "SCAIL2WanModel"),
        "0.31.0": ("WAN_Animate2", "comfy.ldm.wan.model_animate2.WanAnimate2Model"),
    },
))
