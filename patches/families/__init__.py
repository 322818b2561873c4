"""Model families: which diffusion models the scope opens for, and why it declines the others.

Each module in this package declares its ``Family`` and registers it; the engine never names a
family. A model is recognised by ComfyUI's own classes: the ``comfy.supported_models`` class of
its config (its class first, then its bases: ``FluxSchnell`` is FLUX.1 through ``Flux``, while
``Flux2``, also a ``Flux`` subclass, is claimed by FLUX.2 before) and the class of its diffusion
model. Names, not imports, so a family whose classes the ComfyUI running lacks still loads. Each
family also says which ComfyUI release added its classes (``comfyui``, ``added_in``): the docs'
supported-model table and the tests read it here.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import types
from typing import Callable, Mapping, NamedTuple, Optional, Union

SUPPORTED_MODELS_MODULE = "comfy.supported_models"
OLDEST_COMFYUI = "0.3.75"  # the oldest ComfyUI the pack runs on (pyproject.toml's requires-comfyui)
# Where a family's self-attention calls hold the text tokens (sparse attention keeps them exact):
TEXT_FIRST, TEXT_LAST, TEXT_NONE = "first", "last", "none"  # before the latent's, after them, no text there


@dataclasses.dataclass(frozen=True)
class Family:
    """What the engine reads of a family: how to recognise its models, whether the Scope opens for them
    (and why not), and whether its ControlNets' calls run in the Scope; and, for the docs and the tests,
    the ComfyUI release that added its classes."""
    name: str
    config_classes: tuple[str, ...]        # comfy.supported_models class names
    diffusion_models: tuple[str, ...]      # "module.Class" of the diffusion model
    opens: bool = True
    why_not: str = ""                      # for a family that never opens
    scope_controlnets: bool = False        # ControlNets in the sampling loop run in the scope
    # Where its self-attention calls hold the text tokens (TEXT_*), or a function of the ComfyUI running
    # that says it; "" (not declared): sparse attention stays off for the family.
    joint_text: Union[str, Callable[[], str]] = ""
    comfyui: str = OLDEST_COMFYUI          # the oldest ComfyUI release with its config and diffusion model classes
    # The release that added each class of the family that ``comfyui`` does not date, release -> names: a config
    # class's subclass it serves that is newer than OLDEST_COMFYUI, or a diffusion model a later release added.
    added_in: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "added_in", types.MappingProxyType(dict(self.added_in)))

    def text_position(self) -> str:
        """Where this family's self-attention calls hold the text tokens (TEXT_*), "" where it does not say."""
        if callable(self.joint_text):
            return self.joint_text()
        return self.joint_text

    def release_with(self, name: str) -> str:
        """The ComfyUI release that added ``name``, a class of this family (a comfy.supported_models class
        name or a diffusion model's "module.Class")."""
        return next((release for release, names in self.added_in.items() if name in names), self.comfyui)


class Recognition(NamedTuple):
    family: Optional[Family]
    name: str      # the model as Status names it: "FLUX.1 (FluxSchnell)", or its config class alone
    message: str

    @property
    def opens(self) -> bool:
        return self.family is not None and self.family.opens


# Filled at import by the modules of this package; never changed after.
REGISTRY: dict[str, Family] = {}


def register(family: Family) -> Family:
    for other in REGISTRY.values():
        clash = set(other.config_classes) & set(family.config_classes)
        if clash and other.name != family.name:
            raise ValueError(f"{family.name} and {other.name} both claim {sorted(clash)}")
    REGISTRY[family.name] = family
    return family


def recognise(model_patcher) -> Recognition:
    """Which family ``model_patcher`` belongs to, from its config's and diffusion model's classes."""
    base = getattr(model_patcher, "model", None)
    config, diffusion = getattr(base, "model_config", None), getattr(base, "diffusion_model", None)
    diffusion_name = (f"{type(diffusion).__module__}.{type(diffusion).__qualname__}" if diffusion is not None
                      else "no diffusion model")
    return recognise_classes(type(config) if config is not None else None, diffusion_name)


def recognise_classes(config_cls: Optional[type], diffusion_name: str) -> Recognition:
    """``recognise`` from the classes alone: the model config's class and the diffusion model's
    "module.Class" (the tests recognise every comfy.supported_models class without building one)."""
    config_name = config_cls.__name__ if config_cls is not None else "no model config"
    claims = {cls: fam for fam in REGISTRY.values() for cls in fam.config_classes}
    for cls in config_cls.__mro__ if config_cls is not None else ():
        family = claims.get(cls.__name__) if cls.__module__ == SUPPORTED_MODELS_MODULE else None
        if family is None:
            continue
        if diffusion_name not in family.diffusion_models:
            return Recognition(None, config_name, f"unrecognised model: {cls.__name__} config with diffusion model "
                                                  f"{diffusion_name} (expected {', '.join(family.diffusion_models)})")
        name = f"{family.name} ({config_name})"
        return Recognition(family, name, name if family.opens else f"{family.name} is not supported: {family.why_not}")
    return Recognition(None, config_name, f"unrecognised model {config_name} (diffusion model {diffusion_name})")


for _module in pkgutil.iter_modules(__path__):  # each module registers its families
    importlib.import_module(f"{__name__}.{_module.name}")
