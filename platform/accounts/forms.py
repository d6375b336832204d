"""Forms about accounts that are not allauth's."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError

from accounts.lockout import sign_in_locked


class LockoutAwareAdminLoginForm(AdminAuthenticationForm):
    """The admin's log-in form, saying so when the account's sign-ins are locked (accounts.lockout): the backend
    refuses a locked account anyway, but Django's form would call that a wrong password."""

    def clean(self) -> dict[str, Any]:
        locked = sign_in_locked(login=self.cleaned_data.get("username") or "")
        if locked:
            raise ValidationError(f"Not signed in: {locked}.", code="locked")
        return super().clean()
