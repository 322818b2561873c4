"""Where the Scope's override meets others. A node placed after the Scope may set its own attention
override: the sampling wrapper sees it at the first step and says whether the calls it passes on still
reach the Scope (observed: the router counts the calls that reach it), or whether it replaced the
Scope. And ComfyUI calls a ControlNet's blocks in the sampling loop without ``transformer_options``:
for the families that want them, each of its submodules whose ``forward`` takes them gets a forward
pre-hook that hands a caller that passed none the Scope's override (removed when the generation ends)."""
from __future__ import annotations

import inspect
import re

import torch

OVERRIDE_KEY = "optimized_attention_override"  # where ComfyUI's wrap_attn looks for an override


def installed_override(model_options: dict):
    """The attention override ComfyUI will call for this model evaluation, or None."""
    return model_options.get("transformer_options", {}).get(OVERRIDE_KEY)


def short_name(override) -> str:
    """What Status calls an attention override: the function or method that made it (its qualified
    name up to "<locals>": KJNodes' is PathchSageAttentionKJ.patch, ComfyUI's Model Attention Backend's
    ModelPatcher.set_model_optimized_attention) and, for a custom node's, its folder in custom_nodes/.
    Never its module's name, which for a custom node is its file path (ComfyUI names the modules it
    loads from custom_nodes/ so, a folder's dots written "_x_")."""
    qualname = getattr(override, "__qualname__", None)
    if qualname is None:  # a callable object
        qualname = type(override).__qualname__
    made_by = qualname.split(".<locals>.")[0]
    module = getattr(override, "__module__", None)
    if not isinstance(module, str) or ("/" not in module and "\\" not in module):
        return made_by
    folder = re.split(r"[\\/]", module)[-1].split(".")[0].replace("_x_", ".")
    return f"{made_by} ({folder})"


def another_override_note(installed, reached_scope: bool) -> str:
    """What Status says of a model whose step ran under ``installed`` rather than the Scope's router."""
    if reached_scope:
        return f"below {short_name(installed)}, which wraps the Scope: the calls it passes on reach the Scope"
    return f"replaced by {short_name(installed)}: Sage Attention Scope inactive for this model"


def control_models(conds) -> list[torch.nn.Module]:
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


def remove_hooks(hooks: dict[int, list]) -> None:
    for handle in (h for handles in hooks.values() for h in handles):
        handle.remove()
