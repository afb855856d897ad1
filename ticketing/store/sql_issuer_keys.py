"""The OIDC issuer's public keys the desk fetched, kept after the issuer drops them.

One row per issuer and ``kid``: the public JWK as first fetched, and when it was first and
last seen in the issuer's JWKS. A row is never overwritten: when the issuer serves a kid it
already served with other material, the row keeps the first key and the kid is reported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from ticketing.errors import IssuerKeyRefused
from ticketing.oidc_archive import ArchivedKey, public_issuer_keys, same_material
from ticketing.store.sql_database import SQLDatabase, from_timestamp, to_timestamp


class SQLIssuerKeys(SQLDatabase):
    """The archive of the trusted OIDC issuer's public keys."""

    def record_issuer_keys(
        self, issuer: str, keys: Sequence[Mapping[str, str]], *, now: datetime
    ) -> list[str]:
        """Keep each public key (by kid) as seen at ``now``; return kids whose key changed.

        Raises IssuerKeyRefused for a key that is not a public RSA JWK (private material above
        all), before anything is written.
        """
        public, refused = public_issuer_keys({"keys": list(keys)})
        if refused:
            raise IssuerKeyRefused(f"an issuer key that is not public is never kept: {refused[0]}")
        changed: list[str] = []
        seen = to_timestamp(now)
        with self._transaction() as db:
            for jwk in public:
                row = db.execute(
                    "SELECT jwk FROM oidc_issuer_keys WHERE issuer = ? AND kid = ?",
                    (issuer, jwk["kid"]),
                ).fetchone()
                if row is None:
                    db.execute(
                        "INSERT INTO oidc_issuer_keys (issuer, kid, jwk, first_seen, last_seen)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (issuer, jwk["kid"], json.dumps(jwk, sort_keys=True), seen, seen),
                    )
                elif same_material(json.loads(row[0]), jwk):
                    db.execute(
                        "UPDATE oidc_issuer_keys SET last_seen = ?"
                        " WHERE issuer = ? AND kid = ? AND last_seen < ?",
                        (seen, issuer, jwk["kid"], seen),
                    )
                else:
                    changed.append(jwk["kid"])
        return changed

    def issuer_keys(self, issuer: str) -> list[ArchivedKey]:
        """Return every key kept for ``issuer``, oldest first."""
        rows = self._db.execute(
            "SELECT kid, jwk, first_seen, last_seen FROM oidc_issuer_keys WHERE issuer = ?"
            " ORDER BY first_seen, kid",
            (issuer,),
        ).fetchall()
        return [
            ArchivedKey(
                issuer=issuer,
                kid=row[0],
                jwk=json.loads(row[1]),
                first_seen=from_timestamp(row[2]),
                last_seen=from_timestamp(row[3]),
            )
            for row in rows
        ]
