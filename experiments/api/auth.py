"""How the API knows who calls it with a token: django-rest-knox's check of the key's digest
(an expired token is deleted and refused), and the token's last use recorded."""

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from knox.auth import TokenAuthentication

from experiments.models import ApiToken

LAST_USE_RESOLUTION = timedelta(minutes=1)


class ApiTokenAuthentication(TokenAuthentication):
    def validate_user(self, auth_token):
        user, token = super().validate_user(auth_token)
        now = timezone.now()
        # one write a minute at most, whatever the request rate; a conditional UPDATE, no race
        ApiToken.objects.filter(
            Q(last_used_at=None) | Q(last_used_at__lt=now - LAST_USE_RESOLUTION), pk=token.pk
        ).update(last_used_at=now)
        return user, token


class ApiTokenScheme(KnoxTokenScheme):
    """The OpenAPI schema's word for it: knox's `Authorization: Token KEY`."""

    target_class = "experiments.api.auth.ApiTokenAuthentication"
    name = "tokenAuth"
