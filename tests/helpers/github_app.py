"""The GitHub App the tests install in the embedded GitHub server, and its RSA key pairs."""

from __future__ import annotations

from functools import cache

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from embedded_github import SandboxApp

APP_ID = 4242
INSTALLATION_ID = 777
SLUG = "ticket-desk"


@cache
def private_pem(name: str) -> str:
    """Return a 2048-bit RSA private key in PEM form, one per name (made once per run)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def public_pem(name: str) -> str:
    """Return the public half of ``private_pem(name)``."""
    key = serialization.load_pem_private_key(private_pem(name).encode(), password=None)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def desk_app() -> SandboxApp:
    """Return the App the tests install: ``ticket-desk`` with the ``app`` key pair."""
    return SandboxApp(APP_ID, SLUG, public_pem("app"), INSTALLATION_ID, f"{SLUG}[bot]", 9001)
