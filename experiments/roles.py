"""Who may do what: three roles, enforced alike in pages (decorators) and the API (permissions).

- viewer: reads everything (every logged-in user without another role);
- experimenter (the "experimenter" group): defines, imports, cancels and annotates (excludes,
  includes, reparses) experiments and runs of their own;
- admin (staff or superuser): everything, including hosts, users (the Django admin) and other
  people's experiments.

`python manage.py setrole USER ROLE` gives a user a role.
"""

from functools import wraps

from django.core.exceptions import PermissionDenied
from rest_framework import permissions

VIEWER, EXPERIMENTER, ADMIN = "viewer", "experimenter", "admin"
ROLES = (VIEWER, EXPERIMENTER, ADMIN)
EXPERIMENTER_GROUP = "experimenter"


def role_of(user) -> str | None:
    if user is None or not user.is_authenticated:
        return None
    if user.is_staff or user.is_superuser:
        return ADMIN
    if user.groups.filter(name=EXPERIMENTER_GROUP).exists():
        return EXPERIMENTER
    return VIEWER


def may_experiment(user) -> bool:
    """Define experiments and import runs."""
    return role_of(user) in (EXPERIMENTER, ADMIN)


def may_change(user, experiment) -> bool:
    """Cancel an experiment, annotate its runs, add imports to it: its author (an experimenter
    still) or an admin."""
    role = role_of(user)
    return role == ADMIN or (role == EXPERIMENTER and experiment.created_by_id == user.id)


def may_administer(user) -> bool:
    """Hosts, users, deletes."""
    return role_of(user) == ADMIN


FORBIDDEN = {
    "experiment": "viewers read; defining experiments and importing runs needs the experimenter role",
    "change": "only the experiment's author or an admin changes it",
    "admin": "only admins register and probe hosts",
}


def require_change(user, experiment) -> None:
    """PermissionDenied (403 with the reason, in pages and the API alike) unless the user may
    change the experiment."""
    if not may_change(user, experiment):
        raise PermissionDenied(FORBIDDEN["change"])


def role_required(check, why: str):
    """A view decorator: 403 with `why` unless check(request.user) (the view is login_required)."""

    def decorate(view):
        @wraps(view)
        def guarded(request, *args, **kwargs):
            if not check(request.user):
                raise PermissionDenied(why)
            return view(request, *args, **kwargs)

        return guarded

    return decorate


class ExperimenterWrites(permissions.BasePermission):
    """Everyone logged in reads; writes need the experimenter role (object checks are the view's)."""

    message = FORBIDDEN["experiment"]

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in permissions.SAFE_METHODS or may_experiment(request.user)


class AdminWrites(permissions.BasePermission):
    """Everyone logged in reads hosts; only admins register or probe them (they decide which
    machines the dashboard logs in to)."""

    message = FORBIDDEN["admin"]

    def has_permission(self, request, view):
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in permissions.SAFE_METHODS or may_administer(request.user)


def context(request) -> dict:
    """Templates show only what the user may do: `role` is viewer, experimenter or admin."""
    return {"role": role_of(getattr(request, "user", None))}
