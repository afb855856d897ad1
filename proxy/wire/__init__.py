"""OpenAI's wire format: request bodies in, completions and model lists out.

- :mod:`proxy.wire.requests`: chat and legacy completion bodies, validated into a ``ChatRequest``
- :mod:`proxy.wire.messages`: the ``messages`` array
- :mod:`proxy.wire.tools`: ``tools``/``functions``, the tool choice, ``response_format``
- :mod:`proxy.wire.invalid`: the one way a field is refused (``InvalidRequest`` naming it)
- :mod:`proxy.wire.responses`: completion objects, streamed chunks, model lists, usage

References: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/models/list.
"""
