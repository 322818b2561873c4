"""The pack's state for as long as ComfyUI runs (made at load in nodes/__init__.py, handed to every
router; a test makes its own), as two objects that share nothing: ``knowledge``, what the pack has
learned about this machine (``decide`` and the router read it), and ``ledger``, what it reports (the
Status and Compare nodes render its snapshot). The Status node's reset clears the ledger only."""
from __future__ import annotations

import logging
from typing import Optional

import torch

from .. import backends, timing
from .knowledge import Knowledge
from .ledger import Ledger

log = logging.getLogger(__name__)


class Session:
    def __init__(self, *, store=None, clock: timing.Clock = timing.event_clock,
                 finder: backends.Finder = backends.Finder(), step_clock: Optional[timing.StepClock] = None):
        self.knowledge = Knowledge(store=store, clock=clock, finder=finder, step_clock=step_clock)
        self.ledger = Ledger()

    def use_kernel(self, choice: str, device: torch.device | str) -> backends.Resolution:
        """The candidates ``choice`` binds on ``device``, said once in the log and kept for Status."""
        found = self.knowledge.kernel(choice, device)
        names = ", ".join(bound.backend.name for bound in found.candidates) or None
        versions = "; ".join(dict.fromkeys(bound.version for bound in found.candidates)) or None
        if self.ledger.note_kernel(str(device), choice, names, versions, found.why):
            if found.candidates:
                log.info("Sage Attention Scope on %s: %s, %s (%s)", device, names, versions, found.why)
            else:
                log.info("Sage Attention Scope on %s: ComfyUI's attention only: %s", device, found.why)
        return found
