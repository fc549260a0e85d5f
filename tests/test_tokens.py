"""API tokens are stored as digests (whoever reads the database reads no key), expire, and say
when they were last used; the token page is never cached."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from experiments.models import ApiToken
from experiments.services.tokens import new_token

from .factories import UserFactory

pytestmark = pytest.mark.django_db


def _calls(key: str):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get("/api/experiments/")


def test_a_token_is_stored_as_a_digest_and_logs_in_until_it_expires(settings):
    user = UserFactory(username="ci")
    key = new_token(user)
    stored = ApiToken.objects.get(user=user)
    assert key not in repr(list(ApiToken.objects.values())) and len(stored.digest) == 128
    assert abs(stored.expiry - timezone.now() - timedelta(days=90)) < timedelta(minutes=1)
    assert stored.last_used_at is None
    assert _calls(key).status_code == 200
    stored.refresh_from_db()
    assert timezone.now() - stored.last_used_at < timedelta(minutes=1)

    ApiToken.objects.filter(pk=stored.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    assert _calls(key).status_code == 401
    assert not ApiToken.objects.filter(user=user).exists()  # an expired token is gone


def test_the_command_makes_a_token_that_expires_when_asked():
    UserFactory(username="gate")
    said = io.StringIO()
    call_command("drf_create_token", "gate", "--days", "7", stdout=said)
    key = said.getvalue().split()[2]
    assert _calls(key).status_code == 200
    expiry = ApiToken.objects.get(user__username="gate").expiry
    assert abs(expiry - timezone.now() - timedelta(days=7)) < timedelta(minutes=1)


def test_the_token_page_is_never_cached_and_says_expiry_and_last_use(client):
    user = UserFactory(username="dba")
    key = new_token(user)
    _calls(key)
    client.force_login(user)
    page = client.get("/account/token/")
    assert "no-store" in page["Cache-Control"]
    text = page.content.decode()
    assert "only its digest is kept" in text and "expires" in text and "last used" in text
