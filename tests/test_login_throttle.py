"""Password guessing is locked out (django-axes): per user name and address, reset by a success,
with a page that says so; a header a client sets itself does not change the address."""

import pytest

from .factories import UserFactory

pytestmark = pytest.mark.django_db


def attempt(client, password: str, **extra):
    return client.post("/login/", {"username": "alice", "password": password}, **extra)


def test_five_wrong_passwords_lock_the_user_name_out_from_that_address(client, settings):
    UserFactory(username="alice", password="correct horse battery")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt(client, "guess").status_code == 200  # the form again, with its error
    locked = attempt(client, "guess")
    assert locked.status_code == 429
    assert "too many wrong passwords" in locked.content.decode()
    assert f"Try again in {settings.AXES_COOLOFF_TIME.seconds // 60} minutes" in locked.content.decode()
    # now even the right password is refused from here
    assert attempt(client, "correct horse battery").status_code == 429
    # another address, or another user from this one, is not locked out
    assert attempt(client, "correct horse battery", REMOTE_ADDR="10.1.2.3").status_code == 302
    UserFactory(username="bob", password="pw-of-bob-123")
    assert client.post("/login/", {"username": "bob", "password": "pw-of-bob-123"}).status_code == 302


def test_a_forged_forwarded_for_header_does_not_escape_the_lockout(client, settings):
    UserFactory(username="alice", password="correct horse battery")
    for n in range(settings.AXES_FAILURE_LIMIT):
        attempt(client, "guess", HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
    assert attempt(client, "correct horse battery", HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 429


def test_a_success_resets_the_count(client, settings):
    UserFactory(username="alice", password="correct horse battery")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        attempt(client, "guess")
    assert attempt(client, "correct horse battery").status_code == 302
    client.logout()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt(client, "guess").status_code == 200
