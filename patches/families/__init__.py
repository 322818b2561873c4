"""Model families: which diffusion models the scope opens for, and what each one's calls do.

Each module in this package declares one ``Family`` and registers it; the engine never names a
family. A model is recognised by ComfyUI's own classes: the ``comfy.supported_models`` class of
its config (its class first, then its bases: ``FluxSchnell`` is FLUX.1 through ``Flux``, while
``Flux2``, also a ``Flux`` subclass, is claimed by FLUX.2 before) and the class
of its diffusion model. Names, not imports, so a family whose classes a ComfyUI lacks (LTX-2 on
ComfyUI 0.3.75) still loads.
"""
from __future__ import annotations

import dataclasses
import importlib
import logging
import pkgutil
from typing import Optional

from ..reasons import Reason

log = logging.getLogger(__name__)

SUPPORTED_MODELS_MODULE = "comfy.supported_models"


@dataclasses.dataclass(frozen=True)
class CallSite:
    """One kind of attention call a family makes, for the docs and the tests' tables.
    ``reason`` None: eligible (runs on SageAttention when measured faster); else the reason it
    stays on SDPA at default settings. ``unreached``: ComfyUI makes the call without the
    model's transformer_options, so it never reaches the scope (SDPA, not counted)."""
    name: str
    reason: Optional[Reason]
    why: str = ""
    unreached: bool = False


@dataclasses.dataclass(frozen=True)
class Family:
    name: str
    config_classes: tuple[str, ...]        # comfy.supported_models class names
    diffusion_models: tuple[str, ...]      # "module.Class" of the diffusion model
    call_sites: tuple[CallSite, ...] = ()
    opens: bool = True
    why_not: str = ""                      # for a family that never opens
    scope_controlnets: bool = False        # ControlNets in the sampling loop run in the scope
    needs: str = ""                        # what a ComfyUI must have for it (docs, test skips)


@dataclasses.dataclass(frozen=True)
class Recognition:
    family: Optional[Family]
    config_class: str
    diffusion_model: str
    message: str

    @property
    def opens(self) -> bool:
        return self.family is not None and self.family.opens

    @property
    def name(self) -> str:
        """The model as Status names it: "FLUX.1 (FluxSchnell)", or its config class alone."""
        config = self.config_class.rsplit(".", 1)[-1]
        return f"{self.family.name} ({config})" if self.family else config


# Filled at import by the modules of this package; never changed after.
REGISTRY: dict[str, Family] = {}


def register(family: Family) -> Family:
    for other in REGISTRY.values():
        clash = set(other.config_classes) & set(family.config_classes)
        if clash and other.name != family.name:
            raise ValueError(f"{family.name} and {other.name} both claim {sorted(clash)}")
    REGISTRY[family.name] = family
    return family


def _qualname(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def recognise(model_patcher) -> Recognition:
    """Which family ``model_patcher`` belongs to, from its config's and diffusion model's classes."""
    base_model = getattr(model_patcher, "model", None)
    config = getattr(base_model, "model_config", None)
    diffusion = getattr(base_model, "diffusion_model", None)
    config_name = _qualname(type(config)) if config is not None else "no model config"
    diffusion_name = _qualname(type(diffusion)) if diffusion is not None else "no diffusion model"
    claims = {cls: fam for fam in REGISTRY.values() for cls in fam.config_classes}
    for cls in type(config).__mro__ if config is not None else ():
        if cls.__module__ != SUPPORTED_MODELS_MODULE or cls.__name__ not in claims:
            continue
        family = claims[cls.__name__]
        if diffusion_name not in family.diffusion_models:
            return Recognition(None, config_name, diffusion_name,
                               f"unrecognised model: {cls.__name__} config with diffusion model {diffusion_name} "
                               f"(expected {', '.join(family.diffusion_models)})")
        if not family.opens:
            return Recognition(family, config_name, diffusion_name,
                               f"{family.name} is not supported: {family.why_not}")
        return Recognition(family, config_name, diffusion_name, f"{family.name} ({type(config).__name__})")
    return Recognition(None, config_name, diffusion_name,
                       f"unrecognised model {type(config).__name__} (diffusion model {diffusion_name})")


def _import_all() -> None:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


_import_all()
