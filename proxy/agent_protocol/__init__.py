"""The Agent Protocol v1 front: ``routes`` (HTTP, a thin adapter over ``TaskDesk``) and
``wire`` (pure: bodies in; tasks, steps, artifacts and pagination out)."""
