"""The audit trail (django-auditlog): tracked columns are logged when saved (settings list them),
with the page's user from the middleware. Services wrap their writes in `audited_by(user)`,
since an API request's user comes from its token, which the middleware does not see; actions
that change no tracked column of their own get an entry of their own (`audit`)."""

from contextlib import AbstractContextManager, nullcontext

from auditlog.context import set_actor
from auditlog.models import LogEntry


def _who(user):
    return user if user is not None and getattr(user, "is_authenticated", False) else None


def audited_by(user) -> AbstractContextManager:
    """Saves inside are logged as this user's."""
    who = _who(user)
    return set_actor(who) if who is not None else nullcontext()


def audit(instance, user, action: str) -> None:
    """An entry saying what a user did to this row, in words (e.g. "cancelled 4 runs")."""
    LogEntry.objects.log_create(
        instance,
        force_log=True,
        action=LogEntry.Action.UPDATE,
        actor=_who(user),
        changes={},
        additional_data={"action": action},
    )
