"""MCP (the Model Context Protocol): the team as a tool, ``ask_team`` and ``request_approval``.

A thin adapter over the same ticket life cycle as every other front: a tool call becomes a
``ChatRequest`` (:mod:`.tools`, pure), submitted to the desk (:mod:`.routes`, streamable
HTTP at ``/mcp``) and waited on (:mod:`.waiting`) or polled as a task (:mod:`.tasks`, wire
in :mod:`.task_wire`); the JSON-RPC wire is :mod:`.wire` (pure). ``ticketproxy mcp`` speaks
stdio and bridges to ``/mcp`` (:mod:`.stdio`).
"""
