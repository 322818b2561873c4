"""Measured-routing decisions kept between sessions in ComfyUI's user directory
(``sage_attention_scope/measured_routing.json``; deleting it forgets them), handed to the pack's
session at load. A saved decision serves only the setup that measured it (``patches.timing.fingerprint``:
GPU, driver, torch with its CUDA, kernel library), and only once two sessions agreed on it, so a
transient in one measurement never outlives its session. A store that cannot be read or written is
said once and ignored."""
from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Optional


log = logging.getLogger(__name__)
FILE = Path("sage_attention_scope") / "measured_routing.json"
AGREEMENTS_TO_USE = 2  # sessions that must have measured the same winner


class Store:
    """One JSON file: fingerprint -> bucket -> {"use_kernel", "kernel_ms", "comfy_ms", "host_extra_ms", "agreed"}."""

    def __init__(self, path: Path):
        self.path, self.lock, self.data, self.failed = Path(path), threading.Lock(), None, False
        self.offered: set[tuple[str, str]] = set()  # what this session counted already

    def agreed(self, print_: str, bucket: str) -> Optional[dict]:
        with self.lock:
            entry = self._load().get(print_, {}).get(bucket)
        return entry if entry and entry.get("agreed", 0) >= AGREEMENTS_TO_USE else None

    def offer(self, print_: str, bucket: str, use_kernel: bool, kernel_ms: Optional[float], comfy_ms: float,
              host_extra_ms: float = 0.0) -> None:
        """A fresh measurement agrees with the saved one (counted once a session) or replaces it."""
        with self.lock:
            if (print_, bucket) in self.offered:
                return
            self.offered.add((print_, bucket))
            entries = self._load().setdefault(print_, {})
            saved = entries.get(bucket)
            agreed = 1
            if saved and saved.get("use_kernel") == use_kernel:
                agreed = saved["agreed"] + 1
            entries[bucket] = {"use_kernel": use_kernel, "kernel_ms": kernel_ms, "comfy_ms": comfy_ms,
                               "host_extra_ms": host_extra_ms, "agreed": agreed}
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".measured_routing.")
                with os.fdopen(fd, "w") as f:
                    json.dump(self.data, f, indent=1, sort_keys=True)
                os.replace(tmp, self.path)  # atomic: a crash never leaves half a file
            except OSError as exc:
                self._say_once("write", exc)

    def _load(self) -> dict:
        if self.data is None:
            try:
                self.data = json.loads(self.path.read_text()) if self.path.is_file() else {}
            except (OSError, ValueError) as exc:
                self._say_once("read", exc)
                self.data = {}
        return self.data

    def _say_once(self, what: str, exc: Exception) -> None:
        if not self.failed:
            self.failed = True
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
