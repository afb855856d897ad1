"""The audit's view of the OIDC issuer's keys: a kid they lack, a kid that changed.

Pure. An agent's keyless answer names, in its OIDC token, the issuer's key that signed it.
When the keys the audit was given (the issuer's JWKS fetched now, or an archive file) lack
that kid, the issuer has rotated it out: the audit says so plainly and points at the
desk's archive, rather than only calling the token's key unknown.
"""

from __future__ import annotations

from auth.oidc import OidcTrust
from auth.oidc_comment import oidc_token_kid
from ticketing.oidc_archive import jwks_kids

__all__ = ["missing_issuer_key"]


def missing_issuer_key(body: str, oidc: OidcTrust | None) -> str | None:
    """Return the problem of a keyless answer whose issuer key the audit lacks, or None."""
    kid = oidc_token_kid(body)
    if kid is None or oidc is None or kid in jwks_kids(oidc.jwks):
        return None
    return (
        f"the agent's OIDC token was signed with the issuer's key {kid}, which the issuer's "
        "keys given to this audit lack (the issuer has rotated it out since): audit it with "
        "the desk's archive, `ticketproxy oidc-keys export --out FILE`, then "
        "`ticketproxy audit … --oidc-jwks FILE`"
    )
