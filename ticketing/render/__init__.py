"""Rendering, pure: a request into the issue or step comment people read, and the bot's replies.

No I/O and no clock: times are passed in. ``ticket`` is the entry point for issues and step
comments; the other modules hold its parts.
"""
