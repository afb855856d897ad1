"""Signed answers: keys, the keyring, the signed-comment format and its verification.

The package is pure: it reads and writes key files but makes no network calls, and it
imports nothing from ``proxy``, ``ticketing`` or ``github``.
"""
