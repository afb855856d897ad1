"""The A2A 1.0 front over the same tasks as the Agent Protocol: ``routes`` (the JSON-RPC
endpoint and the agent card), ``streams`` (SSE), ``adapter`` (calls into ``TaskDesk``), and
the pure ``wire`` (calls, parameters, errors), ``tasks`` (records as A2A objects) and
``card``."""
