"""The ticket desk: requests in, verified answers out.

It opens one ticket per request key (a retry re-attaches), finds answers with the
repo-wide comment poll, verifies each signed comment with :mod:`auth.verify`, commits the
first valid answer before anyone is told about it, expires tickets nobody answered, and
keeps GitHub's labels and state in step. :class:`Desk` (:mod:`ticketing.desk.facade`)
wires the collaborators; each module of this package holds one of its jobs.
"""

from ticketing.desk.facade import Desk
from ticketing.desk.outcome import Outcome, Rejection, decode_release, encode_release
from ticketing.desk.settings import LABEL, LABEL_AWAITING, DeskSettings

__all__ = [
    "LABEL",
    "LABEL_AWAITING",
    "Desk",
    "DeskSettings",
    "Outcome",
    "Rejection",
    "decode_release",
    "encode_release",
]
