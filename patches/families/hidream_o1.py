"""HiDream-O1-Image (HiDreamO1): a pixel-space model that is the Qwen3-VL-8B decoder itself, 36 layers
of 32 query heads of 128 and 8 key/value heads, over one sequence: the chat-templated prompt, then a
timestep token and the image's 32x32-pixel patches (1024 at 1024², 4096 at 2048²), then any
reference images' patches. Each layer splits its self-attention at the timestep token
(hidream_o1/attention.py): the prompt's tokens attend causally to each other on PyTorch SDPA itself
(never reaching the Scope); the generated tokens (timestep token and patches) attend to every key
through optimized_attention with the model's transformer_options, grouped-query (enable_gqa: 8
key/value heads for 32), no mask: the kernel gets k/v repeated to the query's 32 heads (a copy,
counted `copied`).
From the second forward on the prompt's keys and values come from a cache: one call per layer, the
same query and keys. Reference images also run the Qwen3-VL vision tower (27 blocks, 16 heads of 72),
once a generation and without transformer_options (text_encoders/qwen35.py)."""
from . import Family, register

HIDREAM_O1 = register(Family(name="HiDream-O1", config_classes=("HiDreamO1",),
                             diffusion_models=("comfy.ldm.hidream_o1.model.HiDreamO1Transformer",)))
