"""Wan 2.1 and 2.2 (every config class a ``WAN21_T2V`` subclass): T2V, I2V, first-last-frame, Fun
Control, Camera, VACE, HuMo, S2V, Animate, and newer ComfyUI's (0.33 read) CausalAR, FlowRVS, SCAIL,
SCAIL-2, WanDancer and Animate 2. Per block, head size 128: self-attention over the video tokens (SCAIL
adds its reference frame and half-size pose tokens; Animate 2 runs a pose branch, then one call per
frame: all frames' keys and one pose frame's), cross-attention to the text (UMT5, padded to 512 tokens,
never masked) and, where the model takes an image, to its CLIP tokens first. The automatic floor keeps a
call on SDPA where its query is under 1024 tokens or its key under 512: 512 text keys are not under it."""
from . import CallSite, Family, register
from ..reasons import Reason

_WAN = "comfy.ldm.wan.model."
_NEWER = "newer ComfyUI (0.33 read) makes every CLIP call with low_precision_attention=False (wan/model.py:151)"

WAN = register(Family(
    name="Wan",
    config_classes=("WAN21_T2V",),  # and its subclasses: WAN21_I2V, WAN21_FunControl2V, WAN21_Camera, WAN22_Camera,
    # WAN21_Vace, WAN21_HuMo, WAN22_S2V, WAN22_Animate, WAN22_T2V (the 5B); newer WAN21_CausalAR_T2V, WAN21_FlowRVS
    # (a WanModel), WAN21_SCAIL, WAN21_SCAIL2, WAN22_WanDancer and WAN_Animate2, each with the model below
    diffusion_models=(_WAN + "WanModel", _WAN + "CameraWanModel", _WAN + "VaceWanModel", _WAN + "HumoWanModel",
                      _WAN + "WanModel_S2V", "comfy.ldm.wan.model_animate.AnimateWanModel",
                      _WAN + "SCAILWanModel", _WAN + "SCAIL2WanModel", "comfy.ldm.wan.model_animate2.WanAnimate2Model",
                      "comfy.ldm.wan.model_wandancer.WanDancerModel", "comfy.ldm.wan.ar_model.CausalWanModel"),
    call_sites=(
        CallSite("video self-attention (main blocks, VACE blocks, Animate 2's pose branch and its per-frame calls)",
                 None),
        CallSite("cross-attention to the text (512 UMT5 keys)", None,
                 "512 keys are not under the floor's 512: with a query of 1024 video tokens or more, measured "
                 "routing decides per GPU and shape; a min_seq_len above 512 keeps it on SDPA"),
        CallSite("cross-attention to one CLIP image (257 keys): I2V, Fun Control, Camera (2.1), Animate, SCAIL, "
                 "Animate 2 (both branches)", Reason.TOO_SHORT, "257 keys, under the floor's 512"),
        CallSite("cross-attention to two CLIP images (514 keys: first-last-frame; WanDancer's first frame and "
                 "reference) on ComfyUI 0.3.75", None, "just over the floor: measured routing decides"),
        CallSite("the same 514-key CLIP calls on newer ComfyUI", Reason.LOW_PRECISION_OPT_OUT, _NEWER),
        CallSite("an image-taking model (I2V, SCAIL, Animate 2) run without a CLIP image, newer ComfyUI: its CLIP "
                 "call attends to the whole text (512 keys)", Reason.LOW_PRECISION_OPT_OUT,
                 _NEWER + "; 0.3.75 routes it as the text call; WanDancer without one: no keys, too short"),
        CallSite("HuMo: cross-attention of each latent frame to its audio tokens (16 keys)", Reason.TOO_SHORT,
                 "one frame's tokens against 16 audio keys"),
        CallSite("S2V blocks (self- and text cross-attention) on ComfyUI 0.3.75", None,
                 "its block loop passes no transformer_options (wan/model.py:1338): nothing of S2V reaches the "
                 "scope, so scoping it changes nothing", unreached=True),
        CallSite("S2V blocks on newer ComfyUI (0.8.0 to 0.33 read)", None,
                 "these pass transformer_options: routed as the main blocks above"),
        CallSite("S2V audio injector (each frame's tokens to its 5 audio keys), WanDancer's music injector", None,
                 "called without transformer_options (wan/model.py:1129; 0.33: 1216)", unreached=True),
        CallSite("WanDancer's music encoder (2 self-attention layers over the music features)", None,
                 "called without transformer_options (wan/model_wandancer.py:33)", unreached=True),
        CallSite("CausalAR under its ar_video sampler: blocks frame by frame against the KV cache", None,
                 "its forward_block calls the blocks without transformer_options (wan/ar_model.py:216); under "
                 "any other sampler it is a WanModel and routes as T2V", unreached=True),
        CallSite("Animate face adapter (each frame's tokens to its 5 face keys, after every 5th block)", None,
                 "called without transformer_options (wan/model_animate.py:204; 0.33 too)", unreached=True),
    ),
))
