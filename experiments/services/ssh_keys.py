"""The dashboard's own SSH identity: one ed25519 key pair, made on first use.

The private key is stored encrypted (Fernet, with SSH_KEY_SECRET from the environment) and only
the workers decrypt it, in memory, to log in to hosts. Nobody is ever shown it, and no path a
user types is ever read as a key. Users see the public key, to put in authorized_keys.
"""

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.db import connection, transaction

from experiments.models import SSHIdentity

COMMENT = "recovery-lab"


class SSHKeyError(Exception):
    """The identity cannot be used; the message says what to set."""


def _fernet() -> Fernet:
    if not settings.SSH_KEY_SECRET:
        raise SSHKeyError(
            "SSH_KEY_SECRET is not set (needed for SSH hosts): `make setup` writes one into .env"
        )
    return Fernet(settings.SSH_KEY_SECRET)


def dashboard_identity() -> SSHIdentity:
    """The key pair, made the first time it is asked for. Runs twice: the same pair."""
    existing = SSHIdentity.objects.order_by("id").first()
    if existing is not None:
        return existing
    fernet = _fernet()
    with transaction.atomic():
        with connection.cursor() as cursor:  # two first uses at once: one pair
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('recovery-lab ssh identity'))")
        existing = SSHIdentity.objects.order_by("id").first()
        if existing is not None:
            return existing
        key = Ed25519PrivateKey.generate()
        private = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
        public = key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        return SSHIdentity.objects.create(
            public_key=f"{public.decode()} {COMMENT}", private_key_encrypted=fernet.encrypt(private)
        )


def dashboard_public_key() -> str:
    return dashboard_identity().public_key


def dashboard_private_key() -> bytes:
    """The private key in OpenSSH form, for the workers' SSH client only."""
    try:
        return _fernet().decrypt(bytes(dashboard_identity().private_key_encrypted))
    except InvalidToken:
        raise SSHKeyError(
            "the stored SSH key cannot be decrypted with this SSH_KEY_SECRET: was the secret changed?"
        ) from None
