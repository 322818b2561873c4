"""ControlNets inside the scope.

ComfyUI runs a ControlNet's model inside the sampling loop (``calc_cond_batch`` ->
``ControlNet.get_control``) but calls its blocks without ``transformer_options``, so the
override never sees them. For families that want them, the scope adds a forward pre-hook (the
public ``nn.Module`` hook API, removed when the scope closes) to each ControlNet submodule
whose ``forward`` takes ``transformer_options``: when the caller gave none, the hook passes one
that holds only the scope's override. A caller that passes its own is left alone.
"""
from __future__ import annotations

import inspect
from typing import Iterable

import torch

OPTIONS_PARAM = "transformer_options"


def _options_position(forward) -> int | None:
    """Index of ``transformer_options`` among ``forward``'s positional parameters (self
    excluded), or None when it has no such parameter."""
    try:
        params = [p for p in inspect.signature(forward).parameters.values() if p.name != "self"]
    except (TypeError, ValueError):
        return None
    for index, param in enumerate(params):
        if param.name == OPTIONS_PARAM and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            return index
    return None


def control_models(conds: Iterable) -> list[torch.nn.Module]:
    """The ControlNet models attached to ``calc_cond_batch``'s conds (lists of cond dicts),
    following each ControlNet's chain of previous ones."""
    found: dict[int, torch.nn.Module] = {}
    for cond_list in conds:
        for cond in cond_list or ():
            control = cond.get("control") if isinstance(cond, dict) else None
            while control is not None:
                model = getattr(control, "control_model", None)
                if isinstance(model, torch.nn.Module):
                    found.setdefault(id(model), model)
                control = getattr(control, "previous_controlnet", None)
    return list(found.values())


def hand_override(module: torch.nn.Module, options: dict) -> list:
    """Hooks every submodule of ``module`` whose forward takes ``transformer_options``;
    returns the hook handles."""
    handles, positions = [], {}
    for sub in module.modules():
        forward = type(sub).forward
        if forward not in positions:
            positions[forward] = _options_position(forward)
        position = positions[forward]
        if position is None:
            continue

        def inject(_module, args, kwargs, position=position):
            if OPTIONS_PARAM in kwargs or len(args) > position:
                return None
            return args, {**kwargs, OPTIONS_PARAM: options}

        handles.append(sub.register_forward_pre_hook(inject, with_kwargs=True))
    return handles
