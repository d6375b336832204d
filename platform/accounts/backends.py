"""The authentication backend every way in goes through, with the sign-in lock-out in front of the password."""

from __future__ import annotations

from typing import Any

from allauth.account.auth_backends import AuthenticationBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, Permission
from django.core.exceptions import PermissionDenied
from django.db.models import Model, Q
from django.http import HttpRequest

from accounts.lockout import SignInLocked, sign_in_attempt_begin, sign_in_attempt_succeeded
from accounts.models import User


class LockoutAuthenticationBackend(AuthenticationBackend):
    """allauth's backend (username or e-mail, any case) behind the per-account lock-out of accounts.lockout.

    It answers for every password it checks: a refusal raises PermissionDenied, which ends Django's walk over
    the backends, so the ModelBackend listed after it (kept for sessions signed in through it) neither hashes
    the same wrong password again nor gets around a lock.

    Every page asks who is signed in, what they may see and which roles they hold (the navigation shows them):
    the person comes with their content settings in one query, and their permissions in one more, where
    Django's ModelBackend would spend a query on the settings and two on the permissions.
    """

    def get_user(self, user_id: Any) -> User | None:
        user = User.objects.select_related("content_settings").filter(pk=user_id).first()
        return user if user is not None and self.user_can_authenticate(user) else None

    def get_all_permissions(self, user_obj: AbstractBaseUser | AnonymousUser, obj: Model | None = None) -> set[str]:
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):  # the attribute ModelBackend caches them under, shared with it
            permissions = Permission.objects.all()
            if not user_obj.is_superuser:
                permissions = permissions.filter(Q(user=user_obj) | Q(group__user=user_obj))
            pairs = permissions.values_list("content_type__app_label", "codename").distinct()
            user_obj._perm_cache = {f"{app_label}.{codename}" for app_label, codename in pairs}
        return user_obj._perm_cache

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
