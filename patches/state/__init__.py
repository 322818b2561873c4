"""What the engine keeps: for as long as ComfyUI runs, the ``session`` (the ``knowledge`` it has learned
about this machine, and the ``ledger`` the Status and Compare nodes report), and for one sampling run, the
``generation`` (with the ``route`` of each kind of call it has seen)."""
