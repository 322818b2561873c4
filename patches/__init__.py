"""The scope engine's public face. Imports torch only; ComfyUI is imported where needed."""
from .checks import MAX_REL_L2, MIN_COSINE
from .reasons import Reason
from .scope import apply_scope, router_of, scope_for_family
from .settings import DEFAULT_MIN_SEQ_LEN, KERNEL_AUTO, Settings
from .stats import reset_counters, reset_session, snapshot
from .timing import ROUTING_ALWAYS, ROUTING_MEASURED

__all__ = [
    "DEFAULT_MIN_SEQ_LEN", "KERNEL_AUTO", "MAX_REL_L2", "MIN_COSINE", "ROUTING_ALWAYS", "ROUTING_MEASURED",
    "Reason", "Settings",
    "apply_scope", "reset_counters", "reset_session", "router_of", "scope_for_family", "snapshot",
]
