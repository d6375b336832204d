"""The audit log in Django's admin: readable by staff, never added to, changed or deleted there."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from moderation.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "actor", "action", "target_kind", "target_label", "reason"]
    list_filter = ["action", "target_kind"]
    search_fields = ["target_label", "reason", "actor__username"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
