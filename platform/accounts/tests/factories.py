from __future__ import annotations

from typing import Any

import factory

from accounts.models import User
from accounts.services import moderator_grant, user_roles_on_sign_up

PASSWORD = "correct-horse-battery-staple"


class UserFactory(factory.django.DjangoModelFactory):
    """A person who signed up: a player and a creator."""

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


class ModeratorFactory(UserFactory):
    @factory.post_generation
    def moderator(user: User, create: bool, extracted: Any, **_: Any) -> None:
        if create:
            moderator_grant(user=user)
