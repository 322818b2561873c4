"""ComfyUI nodes of the pack (V3 API). Imported only when ``comfy_api.latest`` exists."""
from comfy_api.latest import ComfyExtension, io

from .scope import SageAttentionScope
from .status import SageAttentionStatus

NODES = [SageAttentionScope, SageAttentionStatus]


class SageAttentionScopeExtension(ComfyExtension):
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        return list(NODES)


async def comfy_entrypoint() -> SageAttentionScopeExtension:
    return SageAttentionScopeExtension()
