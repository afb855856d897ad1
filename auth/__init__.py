"""Signed answers: keys, the keyring, the signed-comment format and its verification,
and the review policy that says which answers wait for approvals and counts them; agents'
own identities, and GitHub Actions OIDC tokens checked against an issuer's keys given as
values.

The package is pure: it reads and writes key files but makes no network calls, and it
imports nothing from ``proxy``, ``ticketing`` or ``github``.
"""
