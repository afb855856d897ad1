"""The offline audit: re-verify, from a ticket's comments alone, what was released and why.

Pure: comments and a keyring in, a :class:`~ticketing.audit.results.TicketAudit` out;
fetching the comments is the caller's job. Verification itself is :mod:`auth.verify`'s.

What ticketproxy records on the ticket, in comments posted by its bot account (the one that
opened the issue), each ending in the reply marker line of :mod:`ticketing.render.replies`::

    <!-- ticketproxy:reply needs-review -->   the answer awaits review (read by `approve`)
    <!-- ticketproxy:reply delivered -->      the answer was released to the agent

and each holding exactly one record line, made by
:func:`ticketing.render.markers.render_record_line`::

    comment_id=<id of the answer comment> sha256=<digest of the answer text>

The audit catches an answer edited after release (``updated_at`` later than the delivered
notice, or a digest that no longer matches), an approval for another text or posted before
the answer, self-approval, a reused jti, a signer without the role, a revoked key, and an
answer released with fewer approvals than the policy requires.

Modules::

    comments   the comments as the audit reads them: bot notice records, signed text, claims
    pending    the answer a reviewer is asked to judge (``approve``, ``reject``)
    issue      audit an issue from its delivered notices, or each step of an agent run
    answer     re-verify the delivered answer and the judgements of it
    delegation a delegated ticket's split (its delegate act) and each child's answer
    review     whether the release had the approvals the review policy requires
    results    the audit's verdict and the signed records behind it
    files      a task issue's uploaded files: the listing, which links to follow, the digests
"""
