"""From a verified answer text to what the agent receives.

Pure: no I/O, no clock. :func:`prepare_release` reads an editor's signed answer against the
request it answers and returns either a :class:`Release` (content, tool calls and finish
reason, ready to render as a completion) or a :class:`Refusal` listing every problem, one
sentence each, for the ticket. It never raises: whatever a person typed becomes one of the
two.

The order of work (:mod:`ticketing.release.prepare`):

1. Split the text into content and ```` ```tool_call ```` fenced blocks (CommonMark fences:
   ``` or ~~~, at least three, closed by the same character at least as long; read by
   :mod:`ticketing.render.fences`), in :mod:`ticketing.release.blocks`.
2. Read each block as ``{"name", "arguments"}`` or OpenAI's ``{"type": "function",
   "function": {...}}`` (:mod:`ticketing.release.blocks`) and check it against the offered
   tools (JSON Schema 2020-12, :mod:`ticketing.release.schemas`), ``tool_choice``,
   ``parallel_tool_calls`` and the legacy ``functions`` field
   (:mod:`ticketing.release.calls`).
3. Check the content against ``response_format`` and AutoGPT's JSON-in-content convention
   (:mod:`ticketing.release.content`, :mod:`ticketing.release.autogpt`; its prompt is read
   by :mod:`ticketing.render.autogpt_prompt` and :mod:`ticketing.render.autogpt_interface`).
   JSON is parsed strictly (:mod:`ticketing.release.json_values`).
4. Cut the content at the first ``stop`` sequence, then check ``max_tokens``; the text is
   never shortened to fit, because a person's words must not be altered silently.

Problems quote untrusted values (names, paths, schema messages) as one-line code spans
(:mod:`ticketing.release.quoting`), so a problem is inert markdown wherever it is shown.
"""

from ticketing.release.blocks import TOOL_CALL_INFO
from ticketing.release.content import CHARS_PER_TOKEN
from ticketing.release.prepare import Refusal, Release, prepare_release

__all__ = ["CHARS_PER_TOKEN", "TOOL_CALL_INFO", "Refusal", "Release", "prepare_release"]
