"""Ends a person's open play sockets whenever their sign-in ends; connected in AccountsConfig.ready."""

from __future__ import annotations

from typing import Any

from allauth.account import signals as allauth_signals
from django.contrib.auth import signals as auth_signals
from django.dispatch import receiver

from accounts.services import user_sockets_close


@receiver(auth_signals.user_logged_out, dispatch_uid="accounts.sockets_close_on_log_out")
def sockets_close_on_log_out(sender: Any, user: Any = None, **kwargs: Any) -> None:
    if user is not None:  # logging out an anonymous visitor sends the signal with no user
        user_sockets_close(user_id=user.pk, reason="you signed out")


@receiver(allauth_signals.password_changed, dispatch_uid="accounts.sockets_close_on_password_changed")
@receiver(allauth_signals.password_set, dispatch_uid="accounts.sockets_close_on_password_set")
@receiver(allauth_signals.password_reset, dispatch_uid="accounts.sockets_close_on_password_reset")
def sockets_close_on_new_password(sender: Any, user: Any, **kwargs: Any) -> None:
    user_sockets_close(user_id=user.pk, reason="your password changed; sign in again")
