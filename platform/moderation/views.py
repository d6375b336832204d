"""Moderation pages, for moderators only."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.roles import MODERATE


@login_required
@permission_required(MODERATE, raise_exception=True)
def queue(request: HttpRequest) -> HttpResponse:
    return render(request, "moderation/queue.html")
