"""Wan 2.1 and 2.2: T2V, I2V and first-last-frame, Fun Control, Camera, VACE, HuMo, S2V, Animate
(every one a ``WAN21_T2V`` subclass). Per block: video self-attention, cross-attention to the text
(UMT5, padded to 512 tokens and zeroed, never masked) and, where the model takes an image, to its
CLIP tokens first (head size 128). The automatic floor keeps a call on SDPA where its query is
under 1024 tokens or its key under 512: 512 text keys are not under it."""
from . import CallSite, Family, register
from ..reasons import Reason

_WAN = "comfy.ldm.wan.model."

WAN = register(Family(
    name="Wan",
    config_classes=("WAN21_T2V",),  # and its subclasses: WAN21_I2V, WAN21_FunControl2V, WAN21_Camera,
    # WAN22_Camera, WAN21_Vace, WAN21_HuMo, WAN22_S2V, WAN22_Animate, WAN22_T2V (the 5B); newer ComfyUI
    # (0.18 to 0.33 read) adds WAN21_FlowRVS (a WanModel), WAN21_SCAIL, WAN21_SCAIL2, WAN_Animate2,
    # WAN22_WanDancer and WAN21_CausalAR_T2V, whose own models follow (same blocks, same calls)
    diffusion_models=(_WAN + "WanModel", _WAN + "CameraWanModel", _WAN + "VaceWanModel", _WAN + "HumoWanModel",
                      _WAN + "WanModel_S2V", "comfy.ldm.wan.model_animate.AnimateWanModel",
                      _WAN + "SCAILWanModel", _WAN + "SCAIL2WanModel", "comfy.ldm.wan.model_animate2.WanAnimate2Model",
                      "comfy.ldm.wan.model_wandancer.WanDancerModel", "comfy.ldm.wan.ar_model.CausalWanModel"),
    call_sites=(
        CallSite("video self-attention (main blocks, VACE blocks)", None),
        CallSite("cross-attention to the text (512 UMT5 keys)", None,
                 "512 keys are not under the floor's 512: with a query of 1024 video tokens or more, measured "
                 "routing decides per GPU and shape; a min_seq_len above 512 keeps it on SDPA"),
        CallSite("I2V, Fun Control, Camera (2.1), Animate: cross-attention to the CLIP image (257 keys)",
                 Reason.TOO_SHORT, "257 keys, under the floor's 512"),
        CallSite("first-last-frame (FLF2V): cross-attention to both frames' CLIP tokens (514 keys)", None,
                 "just over the floor: measured routing decides (newer ComfyUI, 0.33 read, makes every CLIP "
                 "cross-attention call with low_precision_attention=False: SDPA, `low_precision_opt_out`)"),
        CallSite("HuMo: cross-attention of each latent frame to its audio tokens (16 keys)", Reason.TOO_SHORT,
                 "one frame's tokens against 16 audio keys"),
        CallSite("S2V blocks (self- and text cross-attention) on ComfyUI 0.3.75", None,
                 "its block loop passes no transformer_options (wan/model.py:1338): nothing of S2V reaches the "
                 "scope, so scoping it changes nothing", unreached=True),
        CallSite("S2V blocks on newer ComfyUI (0.8.0, 0.12.1 read)", None,
                 "these pass transformer_options: routed as the main blocks above"),
        CallSite("S2V audio injector (each frame's tokens to its 5 audio keys)", None,
                 "called without transformer_options (wan/model.py:1129; 0.12.1 too)", unreached=True),
        CallSite("CausalAR (newer ComfyUI): self-attention to the KV cache while sampling frame by frame", None,
                 "the keys are the frames so far: routed as self-attention"),
        CallSite("WanDancer (newer ComfyUI): music encoder self-attention, music injector (S2V's)", None,
                 "called without transformer_options", unreached=True),
        CallSite("Animate face adapter (each frame's tokens to its 5 face keys, after every 5th block)", None,
                 "called without transformer_options (wan/model_animate.py:204; 0.12.1 too)", unreached=True),
    ),
))
