"""Moderators and their second factor: without an authenticator app, policy keeps them out of moderation."""

from __future__ import annotations

from typing import Any

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import SECRET_SESSION_KEY
from django.test import Client
from django.urls import reverse

from accounts.tests.factories import PASSWORD, ModeratorFactory, totp_code

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_factor_required(settings: Any) -> None:
    settings.MODERATORS_REQUIRE_SECOND_FACTOR = True


def test_a_moderator_without_an_authenticator_is_sent_to_set_one_up(
    client: Client, second_factor_required: None
) -> None:
    client.force_login(ModeratorFactory(second_factor=False))
    response = client.get(reverse("moderation:queue"), follow=True)
    assert response.redirect_chain[0] == (reverse("mfa_activate_totp"), 302)
    assert "Moderating needs a second factor" in response.content.decode()
    assert client.post(reverse("moderation:report_dismiss", args=[1])).url == reverse("mfa_activate_totp")


def test_the_moderation_api_refuses_a_moderator_without_an_authenticator(
    client: Client, second_factor_required: None
) -> None:
    client.force_login(ModeratorFactory(second_factor=False))
    response = client.get(reverse("moderation-queue"))
    assert response.status_code == 403
    assert response.json()["detail"] == (
        f"Moderating needs a second factor: set up an authenticator app at {reverse('mfa_index')} first."
    )


def test_a_moderator_sets_up_an_authenticator_app_and_then_moderates(
    client: Client, second_factor_required: None
) -> None:
    moderator = ModeratorFactory(second_factor=False)
    client.post(reverse("account_login"), {"login": moderator.username, "password": PASSWORD})
    setup = client.get(reverse("moderation:queue"), follow=True)
    assert setup.redirect_chain[0][0] == reverse("mfa_activate_totp")
    # allauth asks for the password again before an authenticator is added.
    assert setup.redirect_chain[-1][0].startswith(reverse("account_reauthenticate"))
    client.post(reverse("account_reauthenticate"), {"password": PASSWORD})
    assert client.get(reverse("mfa_activate_totp")).status_code == 200
    secret = client.session[SECRET_SESSION_KEY]  # what the page's QR code carries to the app
    activated = client.post(reverse("mfa_activate_totp"), {"code": totp_code(secret)})
    assert activated.status_code == 302
    assert Authenticator.objects.filter(user=moderator, type=Authenticator.Type.TOTP).exists()
    assert client.get(reverse("moderation:queue")).status_code == 200
    assert client.get(reverse("moderation-queue")).status_code == 200


def test_a_moderators_password_alone_does_not_sign_them_in(client: Client, second_factor_required: None) -> None:
    moderator = ModeratorFactory()
    response = client.post(reverse("account_login"), {"login": moderator.username, "password": PASSWORD})
    assert response.url == reverse("mfa_authenticate")
    assert client.get(reverse("moderation-queue")).status_code == 403
    assert client.post(reverse("mfa_authenticate"), {"code": "000000"}).status_code == 200  # wrong: asked again
    signed_in = client.post(reverse("mfa_authenticate"), {"code": totp_code()})
    assert signed_in.status_code == 302
    assert client.get(reverse("moderation:queue")).status_code == 200


def test_where_policy_does_not_ask_a_moderator_without_an_authenticator_moderates(
    client: Client, settings: Any
) -> None:
    settings.MODERATORS_REQUIRE_SECOND_FACTOR = False
    client.force_login(ModeratorFactory(second_factor=False))
    assert client.get(reverse("moderation:queue")).status_code == 200
    assert client.get(reverse("moderation-queue")).status_code == 200
