"""Studio pages, for creators."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.roles import CREATE


@login_required
@permission_required(CREATE, raise_exception=True)
def studio(request: HttpRequest) -> HttpResponse:
    return render(request, "worlds/studio.html")
