"""Anthropic's Messages API wire format (``POST /v1/messages``), pure: bodies in, bytes out.

Reference: https://docs.anthropic.com/en/api/messages. :mod:`.requests` reads a body (with
:mod:`.blocks` for ``system`` and ``messages``, :mod:`.tools` for ``tools``, ``tool_choice``
and ``output_config``) into the ``ChatRequest`` every ticket carries, so a ticket from Claude
Code reads like a chat completion's; :mod:`.objects` writes the ``message`` object, its
stream events and the error envelope.
"""
