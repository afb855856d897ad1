"""The durable ticket store: what a restart must not lose.

``model`` holds the records every store hands out, ``interface`` the protocols the desk
asks for, and ``sqlite`` the store ticketproxy runs on by default (its parts in
``sqlite_*``, whose SQL ``postgres`` runs too, on PostgreSQL, for replicas on several hosts).
"""
