"""The health check operators and load balancers poll, the metrics their scrapers read, and the icon browsers
ask for at the site's root."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import require_GET

from shell.metrics import metrics_allowed, metrics_text
from shell.selectors import platform_health


@never_cache
async def healthz(request: HttpRequest) -> JsonResponse:
    """Database, channel layer, Celery broker and inference workers as JSON; 503 when a service fails or no
    worker can take a session (see platform_health)."""
    health = await platform_health()
    return JsonResponse(health, status=200 if health["status"] == "ok" else 503)


@require_GET
@cache_control(max_age=86400)
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """Browsers ask for /favicon.ico whatever the page links; send them to the icon base.html links.

    Temporary, not permanent: the static file's name carries its hash, which changes when the icon does.
    """
    return HttpResponseRedirect(static("favicon.svg"))


@require_GET
@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus metrics for an operator's scraper holding METRICS_TOKEN; for anyone else there is no page."""
    if not metrics_allowed(request.headers.get("Authorization", "")):
        raise Http404
    body, content_type = metrics_text()
    return HttpResponse(body, content_type=content_type)
