from __future__ import annotations

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from accounts.models import User
from accounts.roles import CREATE, MODERATE, PLAY
from accounts.services import moderator_grant
from accounts.tests.factories import PASSWORD, ModeratorFactory, UserFactory, totp_code

pytestmark = pytest.mark.django_db


def fresh(user: User) -> User:
    """The user reloaded, so that Django's per-instance permission cache does not hide a change."""
    return User.objects.get(pk=user.pk)


def test_signing_up_makes_a_player_and_creator_but_not_a_moderator(client: Client) -> None:
    response = client.post(
        reverse("account_signup"),
        {"username": "ada", "email": "ada@example.com", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    ada = User.objects.get(username="ada")
    assert ada.has_perm(PLAY)
    assert ada.has_perm(CREATE)
    assert not ada.has_perm(MODERATE)


def test_sign_up_rejects_mismatched_passwords_and_keeps_the_form(client: Client) -> None:
    response = client.post(
        reverse("account_signup"),
        {"username": "ada", "email": "ada@example.com", "password1": PASSWORD, "password2": "different-one"},
    )
    assert response.status_code == 200
    assert not User.objects.filter(username="ada").exists()
    assert 'value="ada"' in response.content.decode()


def test_log_in_and_log_out_through_the_pages(client: Client) -> None:
    person = UserFactory()
    response = client.post(reverse("account_login"), {"login": person.username, "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(reverse("gallery:home")).context["user"] == person
    client.post(reverse("account_logout"))
    assert not client.get(reverse("gallery:home")).context["user"].is_authenticated


def test_a_wrong_password_does_not_log_in(client: Client) -> None:
    person = UserFactory()
    response = client.post(reverse("account_login"), {"login": person.username, "password": "wrong-password"})
    assert response.status_code == 200
    assert not response.context["user"].is_authenticated


def test_granting_moderator_adds_the_permission() -> None:
    person = UserFactory()
    moderator_grant(user=person)
    assert fresh(person).has_perm(MODERATE)


def test_the_moderation_page_is_for_moderators_only(client: Client) -> None:
    client.force_login(UserFactory())
    assert client.get(reverse("moderation:queue")).status_code == 403
    client.force_login(ModeratorFactory())
    assert client.get(reverse("moderation:queue")).status_code == 200


def test_the_studio_asks_anonymous_visitors_to_log_in(client: Client) -> None:
    response = client.get(reverse("worlds:studio"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("account_login"))


def test_the_navigation_shows_moderation_only_to_moderators(client: Client) -> None:
    moderation_link = f'href="{reverse("moderation:queue")}"'
    client.force_login(UserFactory())
    assert moderation_link not in client.get(reverse("gallery:home")).content.decode()
    client.force_login(ModeratorFactory())
    assert moderation_link in client.get(reverse("gallery:home")).content.decode()


def test_the_api_accepts_a_token_from_the_token_endpoint(client: Client) -> None:
    person = UserFactory()
    token = client.post(reverse("api-token"), {"username": person.username, "password": PASSWORD}).json()["token"]
    assert Token.objects.get(user=person).key == token
    anonymous = Client()
    response = anonymous.get(reverse("api-me"), HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200
    assert response.json()["username"] == person.username
    assert set(response.json()["roles"]) == {"player", "creator"}


def test_the_api_refuses_a_caller_without_credentials(client: Client) -> None:
    assert client.get(reverse("api-me")).status_code in (401, 403)


def test_the_api_accepts_a_session(client: Client) -> None:
    client.force_login(ModeratorFactory())
    assert "moderator" in client.get(reverse("api-me")).json()["roles"]


def test_guessing_passwords_for_a_token_is_throttled_per_address(client: Client) -> None:
    # Eleven accounts, a guess each: the lock-out per account (test_lockout.py) never comes into it.
    people = UserFactory.create_batch(11)
    cache.delete("throttle_anon_127.0.0.1")  # the cache outlives a test run when it is Redis
    statuses = [
        client.post(reverse("api-token"), {"username": person.username, "password": "guess"}).status_code
        for person in people
    ]
    assert statuses[:10] == [400] * 10
    assert statuses[10] == 429
    cache.delete("throttle_anon_127.0.0.1")


def test_the_moderator_command_grants_and_revokes(capsys: pytest.CaptureFixture[str]) -> None:
    person = UserFactory()
    call_command("moderator", "grant", person.username)
    assert fresh(person).has_perm(MODERATE)
    call_command("moderator", "revoke", person.username)
    assert not fresh(person).has_perm(MODERATE)
    with pytest.raises(CommandError, match="no user called"):
        call_command("moderator", "grant", "nobody")


def test_an_account_with_an_authenticator_needs_its_code_for_a_token(client: Client) -> None:
    moderator = ModeratorFactory()
    asked = {"username": moderator.username, "password": PASSWORD}
    refused = client.post(reverse("api-token"), asked)
    assert refused.status_code == 400 and "authenticator app" in refused.json()["non_field_errors"][0]
    assert client.post(reverse("api-token"), asked | {"code": "000000"}).status_code == 400
    assert client.post(reverse("api-token"), asked | {"code": totp_code()}).status_code == 200
