"""The ticket life cycle: request → ticket on GitHub → signed comment → verdict → delivery.

Pure parts (``render/``, ``release/``, ``audit/``, ``threads``, ``commands``,
``desk/decisions``) do no I/O; the store (``store/``) and GitHub (``github/``) sit behind
protocols; ``desk/`` wires the life cycle. See ``docs/architecture.md``.
"""
