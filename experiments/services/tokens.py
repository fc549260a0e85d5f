"""A user's API token (the command line's and scripts' login): made anew, or revoked. One token
a user; its key is shown once, when it is made."""

from django.db import transaction
from rest_framework.authtoken.models import Token


@transaction.atomic
def new_token(user) -> str:
    """A new token for `user`, replacing the one it had (which stops working now); its key."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user).key


def revoke_token(user) -> bool:
    """The user's token deleted: whatever used it is refused from now on. Whether it had one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)
