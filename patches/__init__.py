"""The scope engine. Imports torch only; ComfyUI is imported where a model is scoped."""
from . import backends, trials
from .reasons import Fault, Reason
from . import scope
from .scope import apply_scope, router_of, scope_for_family
from .session import Session
from .settings import KERNEL_AUTO, ROUTING_ALWAYS, ROUTING_MEASURED, Settings

__all__ = ["backends", "scope", "trials", "KERNEL_AUTO", "ROUTING_ALWAYS", "ROUTING_MEASURED", "Fault", "Reason", "Session", "Settings",
           "apply_scope", "router_of", "scope_for_family"]
