"""The HTTP side: the aiohttp app and its fronts, settings, and the ``ticketproxy`` CLI.

See ``docs/architecture.md`` for one line per module.
"""
