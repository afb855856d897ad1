"""The Responses API's wire format (``POST /v1/responses``), pure.

- :mod:`proxy.wire.responses_api.requests`: a body → the ``ChatRequest`` a ticket carries
- :mod:`proxy.wire.responses_api.objects`: the ``response`` object and its stream's events

Reference: https://platform.openai.com/docs/api-reference/responses.
"""
