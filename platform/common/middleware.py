"""Middleware that belongs to no single app."""

from __future__ import annotations

from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

DATABASE_UNAVAILABLE = "The database is unavailable for a moment; nothing was changed. Please try again shortly."


class DatabaseUnavailableMiddleware:
    """While the database is down (a restart, a failover) answer 503 with one sentence, not a 500 page.

    The request's transaction, if any, was rolled back with the lost connection, so the sentence is true; the
    next request gets a working connection (the pool checks each before handing it out, CONN_HEALTH_CHECKS).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        if request.path.startswith("/api/") or "json" in request.headers.get("Accept", ""):
            response: HttpResponse = JsonResponse({"detail": DATABASE_UNAVAILABLE}, status=503)
        else:
            response = HttpResponse(DATABASE_UNAVAILABLE, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "5"
        return response
