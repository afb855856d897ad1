"""AutoGPT replies built for tests: a command in AutoGPT's JSON-in-content convention."""

from __future__ import annotations

import json


def autogpt(name: str, arguments: object, *, legacy: bool = False) -> str:
    """Return an AutoGPT reply whose command is ``name`` with ``arguments``."""
    call = {"name": name, "args" if legacy else "arguments": arguments}
    return json.dumps({"thoughts": {"text": "t"}, "command" if legacy else "use_tool": call})
