"""MCP (the Model Context Protocol): the team as a tool, ``ask_team`` and ``request_approval``.

A thin adapter over the same ticket life cycle as every other front: a tool call becomes a
``ChatRequest`` (:mod:`.tools`, pure), submitted to the desk and waited on
(:mod:`.routes`, streamable HTTP at ``/mcp``); the JSON-RPC wire is :mod:`.wire` (pure).
"""
