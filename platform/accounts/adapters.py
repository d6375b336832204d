"""Hooks django-allauth calls during sign-up and log-in."""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter

from accounts.lockout import sign_in_locked
from accounts.services import user_roles_on_sign_up


class WorldloomAccountAdapter(DefaultAccountAdapter):
    """Gives every new account the player and creator roles, and says so when an account's sign-ins are locked."""

    def save_user(self, request: Any, user: Any, form: Any, commit: bool = True) -> Any:
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            user_roles_on_sign_up(user=user)
        return user

    def pre_authenticate(self, request: Any, **credentials: Any) -> None:
        # The backend refuses a locked account anyway; asking first lets the form say why, in allauth's words.
        if sign_in_locked(login=credentials.get("email") or credentials.get("username") or ""):
            raise self.validation_error("too_many_login_attempts")
        super().pre_authenticate(request, **credentials)
