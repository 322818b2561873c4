"""MiniMax H3 (audio + video, 50 blocks; 56 heads of 128 by the model's defaults): one packed sequence
of the refined Qwen3-VL text, keyframe / reference rows (fl2va, ref2va), the stereo audio (2 rows an
audio latent frame, 40 frames a second) and the video tokens (patch 1 x 2 x 2); each block makes one
self-attention over all of it, mask None, q/k/v in single-owner containers (AttentionTensorContainer),
no block position (total_blocks unset: a first/last-blocks window cannot apply). A token refiner (2
blocks) attends over the text alone, once a sampling run, in extra_conds, without transformer_options:
it never reaches the Scope."""
from . import Family, register

MINIMAX_H3 = register(Family(name="MiniMax H3", config_classes=("MiniMaxH3",),
                             diffusion_models=("comfy.ldm.minimax.model.MiniMaxH3Model",)))
