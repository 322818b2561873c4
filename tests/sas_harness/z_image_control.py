"""A Z-Image Control patch on a tiny Z-Image (the latent and the pixel-space model alike): after each main
layer it runs a control block, which calls attention with no transformer_options (so never through the
Scope), and adds its output, as ComfyUI's ZImageFunControlnet patch does less the encoding of its hint."""
from __future__ import annotations

from typing import Callable

import pytest
import torch

from sage_attention_scope.patches import Settings, scope_for_family

from .doubles import RecordingKernel, make_kernel, registered


def control_patch(config: dict) -> Callable[[dict], dict]:
    """A double-block patch running one random-weight control block of a Z-Image of ``config``'s widths."""
    controlnet = pytest.importorskip("comfy.ldm.lumina.controlnet",
                                     reason="needs a ComfyUI newer than 0.3.75: Z-Image Control "
                                            "(comfy/ldm/lumina/controlnet.py) came with Comfy-Org/ComfyUI#11062, "
                                            "merged 2025-12-03, after the 0.3.75 release")
    import comfy.ops
    torch.manual_seed(3)
    control = controlnet.ZImage_Control(
        dim=config["dim"], n_heads=config["n_heads"], n_kv_heads=config["n_kv_heads"],
        multiple_of=config["multiple_of"], ffn_dim_multiplier=config["ffn_dim_multiplier"], qk_norm=True,
        n_control_layers=1, operations=comfy.ops.disable_weight_init)
    with torch.no_grad():
        for p in control.parameters():
            p.normal_(0, 0.02)

    def patch(args):
        hint, _ = control.forward_control_block(0, args["img_input"], args["img_input"], None, args["pe"], args["vec"])
        return {"img": args["img"] + 0.1 * hint}
    return patch


def with_and_without_scope(session, model, config: dict, sample: Callable, min_seq_len: int):
    """``model`` sampled with the control patch, without the Scope and under it (the double kernel recording):
    (plain, routed). Asserts first that the patch changed the output (its blocks ran)."""
    without_control = sample(model)
    model.set_model_double_block_patch(control_patch(config))
    plain = sample(model)
    assert not torch.allclose(plain, without_control)  # the control blocks ran
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=min_seq_len), session)
        return plain, sample(scoped)
