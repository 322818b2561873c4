"""ComfyUI nodes of the pack (V3 API). Imported only when ``comfy_api.latest`` exists."""
import torch
from comfy_api.latest import ComfyExtension, io

from ..patches import Session
from . import routing_store

# The pack's state for as long as ComfyUI runs: kernel choices, checks, routing, counters.
SESSION = Session(store=routing_store.default_store())


def session() -> Session:
    """The session the nodes use (read at call time, so a test can hand them its own)."""
    return SESSION


def cuda_devices() -> list[torch.device]:
    """This machine's CUDA GPUs (none without CUDA): where the nodes look for kernels to offer and advise on."""
    return [torch.device("cuda", i) for i in range(torch.cuda.device_count())]


from .scope import SageAttentionScope  # noqa: E402
from .status import SageAttentionStatus  # noqa: E402
from .compare import SageAttentionCompare  # noqa: E402

NODES = [SageAttentionScope, SageAttentionStatus, SageAttentionCompare]


class SageAttentionScopeExtension(ComfyExtension):
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        return list(NODES)


async def comfy_entrypoint() -> SageAttentionScopeExtension:
    return SageAttentionScopeExtension()
