"""The one exception tree of ``auth``.

::

    AuthError                   anything auth refuses to do
     ├── KeyringError           a keyring file or entry is unusable (names file, key and fix)
     │    └── KeyringUnavailable  the keyring file cannot be read whole now: judge nothing
     ├── KeyFileError           a private key file is missing, unreadable or invalid
     ├── SigningError           a key cannot be made or a comment cannot be signed
     ├── CommentFormatError     a comment's signature trailer is ambiguous or misplaced
     ├── PolicyError            a review policy file or rule is unusable (names file, rule, fix)
     └── JWKError               a JSON Web Key is invalid; always re-raised by the caller
                                as KeyringError or KeyFileError, with the file named

Verification never raises for a bad comment: :func:`auth.verify.verify_comment` returns a
``Rejected`` value instead, so only configuration and caller mistakes surface as exceptions.
A caller's programming mistake (a naive ``now``, a negative leeway, an answer passed as a
judgement) raises ``ValueError``, outside this tree: it is a bug to fix, not a refusal.
"""

from __future__ import annotations


class AuthError(Exception):
    """Base class for every error ``auth`` raises."""


class KeyringError(AuthError):
    """Report a keyring file or entry that cannot be used."""


class KeyringUnavailable(KeyringError):
    """The keyring file is missing, unreadable or invalid now; wait until it is whole again."""


class KeyFileError(AuthError):
    """Report a private key file that is missing, unreadable or invalid."""


class SigningError(AuthError):
    """Report a key that cannot be made, or a comment that cannot be signed."""


class CommentFormatError(AuthError):
    """Report a comment whose signature trailer is ambiguous or not on the last line."""


class PolicyError(AuthError):
    """Report a review policy file or rule that cannot be used."""


class JWKError(AuthError):
    """Report a JSON Web Key member that is missing, mistyped or unsupported."""
