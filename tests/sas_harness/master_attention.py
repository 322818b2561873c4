"""A re-creation of how ComfyUI master hands attention calls to an override, for the tests: no
ComfyUI that runs here has it. It follows comfy/ldm/modules/attention.py of Comfy-Org/ComfyUI at
05080f6022b2 (its AttentionTensorContainer and wrap_attn), written here from that behaviour, not
copied:

- a model may pass q, k, v as single-owner containers (``peek()``, ``take()``);
- ``preferred_attention`` (a checkpoint's own attention choice) is popped before anything else,
  so an override never sees it, and is used only where no override is set;
- with an override set, an override that has ``container_function`` gets the containers (and no
  ``func``); any other override gets the taken tensors and ``func``;
- ``_inside_attn_wrapper`` in the keyword arguments sends a call straight to the function (its
  own container function where it has one, else the taken tensors).
"""
from __future__ import annotations

import functools

import torch

import comfy.ldm.modules.attention as comfy_attention


class AttentionTensorContainer:
    __slots__ = ("tensor",)

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor

    def peek(self) -> torch.Tensor:
        if self.tensor is None:
            raise RuntimeError("attention tensor container has already been consumed")
        return self.tensor

    def take(self) -> torch.Tensor:
        tensor, self.tensor = self.peek(), None
        return tensor


def wrap_attn(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        preferred = kwargs.pop("preferred_attention", None)
        containers = args[:3] if len(args) >= 3 and isinstance(args[0], AttentionTensorContainer) else None
        if "_inside_attn_wrapper" not in kwargs:
            kwargs["_inside_attn_wrapper"] = True
            override = (kwargs.get("transformer_options") or {}).get("optimized_attention_override")
            if override is not None:
                if containers is not None:
                    if hasattr(override, "container_function"):
                        return override.container_function(*args, **kwargs)
                    args = tuple(c.take() for c in containers) + args[3:]
                return override(func, *args, **kwargs)
            if preferred is not None:
                return preferred(*args, **kwargs)
        if containers is not None:
            args = tuple(c.take() for c in containers) + args[3:]
        return func(*args, **kwargs)
    return wrapper


CALLS: list[tuple] = []  # (q, k, v) as ComfyUI's own attention received them, for the tests


def _attention(q, k, v, heads, **kwargs):
    CALLS.append((q, k, v))
    return comfy_attention.attention_pytorch.__wrapped__(q, k, v, heads, **kwargs)


optimized_attention = wrap_attn(_attention)
