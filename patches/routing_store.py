"""Measured-routing decisions kept between sessions, in ComfyUI's user directory.

A saved decision is used only where the same GPU, driver, torch (and its CUDA) and kernel
library measured it, and only once two sessions agreed on it: a transient in one measurement
(seen once on the H200) then never outlives its session. The file is
``<ComfyUI user directory>/sage_attention_scope/measured_routing.json``; deleting it forgets
everything. A store that cannot be read or written is said once and ignored.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Optional

import torch

log = logging.getLogger(__name__)

FILE = Path("sage_attention_scope") / "measured_routing.json"
AGREEMENTS_TO_USE = 2  # sessions that must have measured the same winner


def fingerprint(device: str, kernel_version: Optional[str]) -> str:
    """What a decision depends on besides its bucket: GPU, driver, torch + CUDA, the kernel's library."""
    dev = torch.device(device)
    parts = [f"torch {torch.__version__}", f"kernel {kernel_version}"]
    if dev.type == "cuda":
        parts += [torch.cuda.get_device_name(dev), "sm%d%d" % torch.cuda.get_device_capability(dev),
                  f"CUDA {torch.version.cuda}", f"driver {driver_version()}"]
    return " | ".join(parts + ([] if dev.type == "cuda" else [dev.type]))


def driver_version() -> str:
    try:
        import pynvml  # nvidia-ml-py, where installed
        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # noqa: BLE001 - else the kernel module's own report
        pass
    try:
        return Path("/proc/driver/nvidia/version").read_text().split("Kernel Module")[1].split()[0]
    except Exception:  # noqa: BLE001 - unknown: decisions still key on everything else
        return "unknown"


class Store:
    """One JSON file: fingerprint -> bucket -> {"use_sage", "sage_ms", "sdpa_ms", "agreed"}."""

    def __init__(self, path: Path):
        self.path, self._lock = Path(path), threading.Lock()
        self._data: Optional[dict] = None
        self._offered: set[tuple[str, str]] = set()  # what this session has counted already
        self._failed = False

    def agreed(self, print_: str, bucket: str) -> Optional[dict]:
        """The saved entry for ``bucket`` where sessions agreed on it often enough."""
        with self._lock:
            entry = self._load().get(print_, {}).get(bucket)
        return entry if entry and entry.get("agreed", 0) >= AGREEMENTS_TO_USE else None

    def offer(self, print_: str, bucket: str, use_sage: bool, sage_ms: Optional[float], sdpa_ms: float) -> None:
        """A fresh measurement: agrees with the saved one (counted once a session) or replaces it."""
        with self._lock:
            if (print_, bucket) in self._offered:
                return
            self._offered.add((print_, bucket))
            data = self._load()
            saved = data.setdefault(print_, {}).get(bucket)
            agreed = saved["agreed"] + 1 if saved and saved.get("use_sage") == use_sage else 1
            data[print_][bucket] = {"use_sage": use_sage, "sage_ms": sage_ms, "sdpa_ms": sdpa_ms, "agreed": agreed}
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".measured_routing.")
                with os.fdopen(fd, "w") as f:
                    json.dump(data, f, indent=1, sort_keys=True)
                os.replace(tmp, self.path)  # atomic: a crash never leaves half a file
            except OSError as exc:
                self._say_once("write", exc)

    def _load(self) -> dict:
        if self._data is None:
            try:
                self._data = json.loads(self.path.read_text()) if self.path.is_file() else {}
            except (OSError, ValueError) as exc:
                self._say_once("read", exc)
                self._data = {}
        return self._data

    def _say_once(self, what: str, exc: Exception) -> None:
        if not self._failed:
            self._failed = True
            log.warning("Sage Attention Scope could not %s its saved routing decisions (%s): %s; every session "
                        "measures again.", what, self.path, exc)


def default_store() -> Optional[Store]:
    """The store in ComfyUI's user directory, or None where there is none."""
    try:
        try:
            import folder_paths  # ComfyUI's own module
        except ImportError:
            from comfy.cmd import folder_paths  # the pip-installable ComfyUI layout
        return Store(Path(folder_paths.get_user_directory()) / FILE)
    except Exception:  # noqa: BLE001 - no user directory: measure every session
        return None
