"""ControlNets inside the scope.

ComfyUI runs a ControlNet's model inside the sampling loop (``calc_cond_batch`` ->
``ControlNet.get_control``) but calls its blocks without ``transformer_options``, so the override
never sees them. For families that want them, the scope adds a forward pre-hook (the public
``nn.Module`` hook API, removed when the scope closes) to each ControlNet submodule whose
``forward`` takes ``transformer_options``: where the caller gave none, the hook passes one that
holds only the scope's override. A caller that passes its own is left alone.
"""
from __future__ import annotations

import inspect
from typing import Iterable, Optional

import torch

OPTIONS = "transformer_options"


def control_models(conds: Iterable) -> list[torch.nn.Module]:
    """The ControlNet models attached to ``calc_cond_batch``'s conds (lists of cond dicts),
    following each ControlNet's chain of previous ones."""
    found: dict[int, torch.nn.Module] = {}
    for cond in (c for conds_list in conds for c in conds_list or () if isinstance(c, dict)):
        control = cond.get("control")
        while control is not None:
            if isinstance(getattr(control, "control_model", None), torch.nn.Module):
                found.setdefault(id(control.control_model), control.control_model)
            control = getattr(control, "previous_controlnet", None)
    return list(found.values())


def _options_position(forward) -> Optional[int]:
    """Where ``transformer_options`` stands among ``forward``'s parameters (self excluded), or None."""
    try:
        params = [p for p in inspect.signature(forward).parameters.values() if p.name != "self"]
    except (TypeError, ValueError):
        return None
    return next((i for i, p in enumerate(params) if p.name == OPTIONS and p.kind != p.VAR_KEYWORD), None)


def hand_override(module: torch.nn.Module, options: dict) -> list:
    """Hooks every submodule of ``module`` whose forward takes ``transformer_options``; the handles."""
    handles, positions = [], {}
    for sub in module.modules():
        forward = type(sub).forward
        position = positions[forward] if forward in positions else positions.setdefault(forward, _options_position(forward))
        if position is None:
            continue

        def inject(_module, args, kwargs, position=position):
            if OPTIONS in kwargs or len(args) > position:
                return None
            return args, {**kwargs, OPTIONS: options}
        handles.append(sub.register_forward_pre_hook(inject, with_kwargs=True))
    return handles
