"""The user model, custom from the first migration so that profiles can grow without a painful swap."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models


class User(AbstractUser):
    """A person on Worldloom; what they may do comes from their roles (groups), see accounts.roles."""

    display_name = models.CharField(max_length=80, blank=True)
    bio = models.TextField(blank=True, max_length=2000)

    class Meta:
        permissions = [
            ("play", "Can play worlds, stories and characters"),
            ("create", "Can author and publish worlds, characters and stories"),
            ("moderate", "Can review submissions and reports and take content down"),
        ]

    def __str__(self) -> str:
        return self.display_name or self.username


class ContentSettings(models.Model):
    """What a person chose to see: mature works show only after they opt in and confirm they are adults."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="content_settings")
    show_mature = models.BooleanField(default=False)
    adult_confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "content settings"

    def __str__(self) -> str:
        return f"content settings of {self.user}"
