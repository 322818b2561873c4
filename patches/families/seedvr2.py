"""SeedVR2 (3B: 20 heads, 7B: 24 heads, head size 128; NaDiT): a video / image upscaler. Each block makes
one joint attention of video and text tokens in windows of about 400 video tokens a frame whatever the
resolution (a ninth of 720p's 45 x 80 tokens, the frame's aspect kept: a 720p frame makes 3 x 3 windows
of 15 x 27, a larger frame more) and a quarter of up to 30 latent frames, shifted by half a window every
other block; each window is followed by a copy of the text (58 positive, 64 negative tokens), and all of
them are packed into one variable-length sequence. comfy/ldm/seedvr/attention.py splits it and calls
``optimized_attention`` once per window, without transformer_options: no call reaches the scope (an
image's windows, about 400 video tokens + the text, are under the floor anyway)."""
from . import Family, register

SEEDVR2 = register(Family(
    name="SeedVR2", config_classes=("SeedVR2",), diffusion_models=("comfy.ldm.seedvr.model.NaDiT",), opens=False,
    why_not=("its attention cannot reach the scope: comfy/ldm/seedvr/attention.py calls optimized_attention once "
             "per window without transformer_options, so no override is ever asked")))
