"""The durable ticket store: what a restart must not lose.

``model`` holds the records every store hands out, ``interface`` the protocols the desk
asks for, and ``sqlite`` the store ticketproxy runs on (its parts in ``sqlite_*``).
"""
