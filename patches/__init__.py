"""The scope engine. Imports torch only; ComfyUI is imported where a model is scoped."""
from . import backends, checks, decide, sampling, timing  # noqa: F401 - the package's public names
from .reasons import Fault, Reason  # noqa: F401
from .sampling import apply_scope, router_of, scope_for_family  # noqa: F401
from .state.session import Session  # noqa: F401
from .settings import KERNEL_AUTO, ROUTING_ALWAYS, ROUTING_MEASURED, Settings  # noqa: F401
