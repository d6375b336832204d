"""The health check operators and load balancers poll."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

from shell.selectors import platform_health


@never_cache
async def healthz(request: HttpRequest) -> JsonResponse:
    """Database, channel layer, Celery broker and inference workers as JSON; 503 when a service fails or no
    worker can take a session (see platform_health)."""
    health = await platform_health()
    return JsonResponse(health, status=200 if health["status"] == "ok" else 503)
