"""Hooks django-allauth calls during sign-up."""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter

from accounts.services import user_roles_on_sign_up


class WorldloomAccountAdapter(DefaultAccountAdapter):
    """Gives every new account the player and creator roles."""

    def save_user(self, request: Any, user: Any, form: Any, commit: bool = True) -> Any:
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            user_roles_on_sign_up(user=user)
        return user
