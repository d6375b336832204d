"""Sign-up tells nobody whether an e-mail address already has an account; only the address's owner learns."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from accounts.models import User
from accounts.tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def sign_up(username: str, email: str) -> Any:
    cache.clear()  # allauth limits sign-ups per address
    fields = {"username": username, "email": email, "password1": PASSWORD, "password2": PASSWORD}
    return Client().post(reverse("account_signup"), fields, follow=True)


def test_signing_up_with_a_taken_address_looks_just_like_signing_up_with_a_new_one() -> None:
    owner = UserFactory(email="ada@example.com")
    fresh = sign_up("babbage", "charles@example.com")
    taken = sign_up("not-ada", "ada@example.com")
    assert taken.redirect_chain == fresh.redirect_chain == [(reverse("account_email_verification_sent"), 302)]
    # The same page, but for the address typed in.
    assert taken.content.decode() == fresh.content.decode().replace("charles@example.com", "ada@example.com")
    assert "already" not in taken.content.decode()
    assert not User.objects.filter(username="not-ada").exists()
    [to_babbage, to_ada] = mail.outbox
    assert to_babbage.to == ["charles@example.com"]
    assert to_ada.to == [owner.email]
    assert "already" in to_ada.body  # the owner learns someone tried, and that they have an account


def test_a_new_account_signs_in_only_after_its_address_is_confirmed() -> None:
    signed_up = sign_up("babbage", "charles@example.com")
    assert not signed_up.context["user"].is_authenticated
    babbage = User.objects.get(username="babbage")
    assert babbage.emailaddress_set.get().verified is False
