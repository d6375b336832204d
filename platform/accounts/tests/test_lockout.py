"""One lock-out per account for every way in: the log-in pages, the token API and the admin."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from accounts.models import User
from accounts.tests.factories import PASSWORD, ModeratorFactory, UserFactory, totp_code

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def counts_forgotten() -> Iterator[None]:
    """Failures and throttles count in the cache, which outlives one test."""
    cache.clear()
    yield
    cache.clear()


def through_the_pages(client: Client, login: str, password: str) -> bool:
    """Whether the log-in page signed the person in."""
    client.post(reverse("account_login"), {"login": login, "password": password})
    return client.session.get("_auth_user_id") is not None


def through_the_token_api(client: Client, login: str, password: str) -> bool:
    return client.post(reverse("api-token"), {"username": login, "password": password}).status_code == 200


def through_the_admin(client: Client, login: str, password: str) -> bool:
    client.post(reverse("admin:login"), {"username": login, "password": password})
    return client.session.get("_auth_user_id") is not None


WAYS_IN: dict[str, Callable[[Client, str, str], bool]] = {
    "pages": through_the_pages,
    "token API": through_the_token_api,
    "admin": through_the_admin,
}


def staff() -> User:
    person = UserFactory()
    person.is_staff = True
    person.save(update_fields=["is_staff"])
    return person


@pytest.mark.parametrize("refused_at", WAYS_IN)
@pytest.mark.parametrize("guessed_at", WAYS_IN)
def test_five_failures_by_one_way_in_lock_the_account_by_every_way_in(guessed_at: str, refused_at: str) -> None:
    person = staff()
    for attempt in range(5):
        assert not WAYS_IN[guessed_at](Client(), person.username, f"guess-{attempt}")
    assert not WAYS_IN[refused_at](Client(), person.username, PASSWORD)


@pytest.mark.parametrize("way_in", WAYS_IN)
def test_the_right_password_still_works_after_four_failures_and_counts_as_none(way_in: str) -> None:
    person = staff()
    for attempt in range(4):
        assert not WAYS_IN[way_in](Client(), person.username, f"guess-{attempt}")
    # A success is no failure, and wipes none out (or a guesser could sign in now and then to keep guessing).
    assert WAYS_IN[way_in](Client(), person.username, PASSWORD)
    assert WAYS_IN[way_in](Client(), person.username, PASSWORD)
    assert not WAYS_IN[way_in](Client(), person.username, "the fifth guess")
    assert not WAYS_IN[way_in](Client(), person.username, PASSWORD)


def test_guesses_by_e_mail_and_by_username_in_any_case_count_against_one_account() -> None:
    person = UserFactory()
    for login in [person.email, person.email.upper(), person.username.upper(), person.username, person.email]:
        assert not through_the_pages(Client(), login, "wrong")
    assert not through_the_token_api(Client(), person.username, PASSWORD)


def test_each_way_in_says_the_account_is_locked_rather_than_that_the_password_is_wrong() -> None:
    person = staff()
    for attempt in range(5):
        through_the_token_api(Client(), person.username, f"guess-{attempt}")
    token = Client().post(reverse("api-token"), {"username": person.username, "password": PASSWORD})
    assert token.status_code == 429
    assert "too many failed sign-ins to this account" in token.json()["detail"]
    assert int(token.headers["Retry-After"]) > 0
    page = Client().post(reverse("account_login"), {"login": person.username, "password": PASSWORD})
    assert "Too many failed login attempts. Try again later." in page.content.decode()
    admin = Client().post(reverse("admin:login"), {"username": person.username, "password": PASSWORD})
    assert "too many failed sign-ins to this account" in admin.content.decode()


def test_wrong_authenticator_codes_for_a_token_count_as_failures() -> None:
    moderator = ModeratorFactory()
    asked = {"username": moderator.username, "password": PASSWORD}
    for attempt in range(5):
        assert Client().post(reverse("api-token"), asked | {"code": f"{attempt:06d}"}).status_code == 400
    assert Client().post(reverse("api-token"), asked | {"code": totp_code()}).status_code == 429


def test_an_unknown_name_locks_as_a_known_one_does() -> None:
    for attempt in range(5):
        through_the_token_api(Client(), "nobody-here", f"guess-{attempt}")
    assert Client().post(reverse("api-token"), {"username": "nobody-here", "password": "x"}).status_code == 429


def test_a_spoofed_x_forwarded_for_gets_no_fresh_throttle_bucket() -> None:
    person = UserFactory()
    answers = [
        Client(HTTP_X_FORWARDED_FOR=f"203.0.113.{number}")
        .post(reverse("api-token"), {"username": f"{person.username}-{number}", "password": "x"})
        .status_code
        for number in range(11)
    ]
    assert answers == [400] * 10 + [429]


def test_behind_a_proxy_the_address_it_forwarded_gets_its_own_throttle_bucket(settings: Any) -> None:
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    answers = [
        Client(HTTP_X_FORWARDED_FOR=f"203.0.113.{number}")
        .post(reverse("api-token"), {"username": f"someone-{number}", "password": "x"})
        .status_code
        for number in range(11)
    ]
    assert answers == [400] * 11


FORWARDING_SETTINGS_PRINTED = (
    "from django.conf import settings; "
    "print(settings.REST_FRAMEWORK['NUM_PROXIES'], settings.ALLAUTH_TRUSTED_PROXY_COUNT, "
    "getattr(settings, 'SECURE_PROXY_SSL_HEADER', None) is not None)"
)


@pytest.mark.parametrize(("behind_proxy", "printed"), [(None, "0 0 False"), ("true", "1 1 True")])
def test_forwarded_headers_are_trusted_only_with_behind_proxy(behind_proxy: str | None, printed: str) -> None:
    environment = {key: value for key, value in os.environ.items() if key != "BEHIND_PROXY"}
    if behind_proxy:
        environment["BEHIND_PROXY"] = behind_proxy
    shown = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", FORWARDING_SETTINGS_PRINTED],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shown.stdout.strip() == printed, shown.stdout + shown.stderr
