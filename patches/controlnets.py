"""ControlNets inside the scope. ComfyUI runs a ControlNet in the sampling loop but calls its blocks
without ``transformer_options``, so the override never sees them. For families that want them the
scope hooks (forward pre-hooks, removed when the scope closes) each ControlNet submodule whose
``forward`` takes ``transformer_options``: where the caller gave none, the hook passes one holding
only the scope's override. A caller that passes its own is left alone."""
from __future__ import annotations

import inspect
from typing import Iterable

import torch


def control_models(conds: Iterable) -> list[torch.nn.Module]:
    """The ControlNet models attached to ``calc_cond_batch``'s conds, each chain of previous ones too."""
    found: dict[int, torch.nn.Module] = {}
    for cond in (c for conds_list in conds for c in conds_list or () if isinstance(c, dict)):
        control = cond.get("control")
        while control is not None:
            if isinstance(getattr(control, "control_model", None), torch.nn.Module):
                found.setdefault(id(control.control_model), control.control_model)
            control = getattr(control, "previous_controlnet", None)
    return list(found.values())


def hand_override(module: torch.nn.Module, options: dict) -> list:
    """Hooks every submodule of ``module`` whose forward takes ``transformer_options``; the handles."""
    handles, positions = [], {}
    for sub in module.modules():
        forward = type(sub).forward
        if forward not in positions:  # where transformer_options stands among its parameters, if anywhere
            params = [p for p in inspect.signature(forward).parameters.values() if p.name != "self"]
            positions[forward] = next((i for i, p in enumerate(params) if p.name == "transformer_options"
                                       and p.kind != p.VAR_KEYWORD), None)
        if positions[forward] is None:
            continue

        def inject(_module, args, kwargs, position=positions[forward]):
            if "transformer_options" in kwargs or len(args) > position:
                return None
            return args, {**kwargs, "transformer_options": options}
        handles.append(sub.register_forward_pre_hook(inject, with_kwargs=True))
    return handles
