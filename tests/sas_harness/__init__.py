"""The test and benchmark harness: a real ComfyUI in this process, the pack imported as a package,
tiny models of every family, kernel doubles, and the helpers both tests/ and bench/ use.

``boot()`` (conftest and every benchmark call it first) starts ComfyUI in this process (from
$COMFYUI_PATH, else .comfyui/ComfyUI, which scripts/setup-env.sh fills) and imports the pack as
``sage_attention_scope``, the way ComfyUI imports a custom-node folder; the modules that build
models need it done. The harness is not part of the pack and ships in no wheel;
scripts/setup-env.sh makes it importable in the development environment (a .pth file naming
tests/), and pytest finds it by its own configuration.
"""
from .host import PACK_NAME, ROOT, NoComfyUI, boot  # noqa: F401
