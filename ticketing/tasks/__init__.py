"""Agent tasks over the desk: a task is an issue, each step its ticket, files kept durably.

:mod:`ticketing.tasks.life_cycle` (``TaskDesk``) is the protocol-neutral life cycle the
Agent Protocol front uses, and an A2A front can adapt too; :mod:`ticketing.tasks.conversation`
(pure) renders a step as the conversation its ticket shows.
"""
