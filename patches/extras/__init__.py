"""The extras, each joined to the core through a named hook (docs/design.md lists them): the sparse tier
(``sparse``, the router's ``tiers``), stepping aside and the step trial (``step_trial``, the ``evaluate``
that sampling wraps each model evaluation in), and torch.compile's custom op (``compiled``, the kernel call
the router makes when the model is being compiled)."""
