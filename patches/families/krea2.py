"""Krea 2 (K2, raw and turbo; Krea2, a SingleStreamDiT): a text-fusion adapter over the Qwen3-VL-4B
features, then 28 single-stream blocks. Per step: two layerwise fusion calls, where each text token's
12 tapped layer features attend to one another (12 keys; the batch is the text tokens); two refiner
calls over the text tokens alone; then one joint call per block over text + image (+ reference)
tokens, text first. Head size 128 throughout: the blocks' 48 heads (12 key/value heads, repeated to
48 before the call), the fusion's 20 heads of 2560. (B, H, N, D) tensors; ComfyUI passes no mask
(the text encoder's is dropped by the model), but an attn1_patch (regional prompting nodes) may add
one to the joint calls: one masking only trailing keys, the same for every query, is sliced off, an
all-zero one dropped, any other stays on SDPA. The blocks set their position (block_type "single")."""
from . import Family, register

KREA2 = register(Family(name="Krea 2", config_classes=("Krea2",),
                        diffusion_models=("comfy.ldm.krea2.model.SingleStreamDiT",)))
