"""The authentication backend every way in goes through, with the sign-in lock-out in front of the password."""

from __future__ import annotations

from typing import Any

from allauth.account.auth_backends import AuthenticationBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from accounts.lockout import SignInLocked, sign_in_attempt_begin, sign_in_attempt_succeeded


class LockoutAuthenticationBackend(AuthenticationBackend):
    """allauth's backend (username or e-mail, any case) behind the per-account lock-out of accounts.lockout.

    It answers for every password it checks: a refusal raises PermissionDenied, which ends Django's walk over
    the backends, so the ModelBackend listed after it (kept for sessions signed in through it) neither hashes
    the same wrong password again nor gets around a lock.
    """

    def authenticate(self, request: HttpRequest | None, **credentials: Any) -> AbstractBaseUser | None:
        login = credentials.get("email") or credentials.get("username") or ""
        if not (login and credentials.get("password")):
            return None
        try:
            attempt = sign_in_attempt_begin(login=login)
        except SignInLocked as locked:
            raise PermissionDenied(str(locked)) from None
        user = super().authenticate(request, **credentials)
        if user is None:
            raise PermissionDenied("wrong login or password")
        sign_in_attempt_succeeded(attempt=attempt)
        return user
