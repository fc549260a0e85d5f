"""A user's API token (the command line's and scripts' login): made anew, or revoked. One token
a user; its key is shown once, when it is made, and only its digest is stored (django-rest-knox);
it expires after API_TOKEN_DAYS unless `days` says otherwise."""

from datetime import timedelta

from django.db import transaction

from experiments.models import ApiToken


@transaction.atomic
def new_token(user, days: int | None = None) -> str:
    """A new token for `user`, replacing the one it had (which stops working now); its key."""
    ApiToken.objects.filter(user=user).delete()
    if days is None:
        _, key = ApiToken.objects.create(user=user)
    else:
        _, key = ApiToken.objects.create(user=user, expiry=timedelta(days=days))
    return key


def revoke_token(user) -> bool:
    """The user's token deleted: whatever used it is refused from now on. Whether it had one."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return bool(deleted)
