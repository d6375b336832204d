from __future__ import annotations

import time
from typing import Any

import factory
from allauth.account.models import EmailAddress
from allauth.mfa import app_settings as mfa_settings
from allauth.mfa.totp.internal.auth import TOTP, format_hotp_value, hotp_value

from accounts.models import User
from accounts.services import moderator_grant, user_roles_on_sign_up

PASSWORD = "correct-horse-battery-staple"
TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"


class UserFactory(factory.django.DjangoModelFactory):
    """A person who signed up and confirmed their e-mail address: a player and a creator."""

    class Meta:
        model = User
        skip_postgeneration_save = True

    username = factory.Sequence(lambda number: f"person{number}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def roles(user: User, create: bool, extracted: Any, **_: Any) -> None:
        if create:
            user.save()
            user_roles_on_sign_up(user=user)
            if user.email:
                EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=True)


class ModeratorFactory(UserFactory):
    """A moderator who has set up an authenticator app, as production asks; `second_factor=False` for one who
    has not. Every one shares TOTP_SECRET, so tests can compute their codes."""

    @factory.post_generation
    def moderator(user: User, create: bool, extracted: Any, **_: Any) -> None:
        if create:
            moderator_grant(user=user)

    @factory.post_generation
    def second_factor(user: User, create: bool, extracted: Any, **_: Any) -> None:
        if create and extracted is not False:
            TOTP.activate(user, TOTP_SECRET)


def totp_code(secret: str = TOTP_SECRET) -> str:
    """The code an authenticator app shows now, read early in its period: allauth accepts only the current
    period (MFA_TOTP_TOLERANCE 0), and a code read in a period's last seconds had expired by the time a
    loaded machine's browser submitted it (a browser test failed so, once)."""
    period = mfa_settings.TOTP_PERIOD
    left = period - time.time() % period
    if left < 5:
        time.sleep(left)
    return format_hotp_value(hotp_value(secret, int(time.time()) // period))
