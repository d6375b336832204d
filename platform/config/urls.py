"""The site's URLs: pages, the JSON API with its OpenAPI schema, and the health check."""

from __future__ import annotations

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from accounts.forms import LockoutAwareAdminLoginForm
from shell.views import favicon, healthz, metrics

# The admin's log-in shares the per-account lock-out of the log-in pages and the token API.
admin.site.login_form = LockoutAwareAdminLoginForm

api_urlpatterns = [
    path("accounts/", include("accounts.apis")),
    path("", include("worlds.api_urls")),
    path("gallery/", include("gallery.api_urls")),
    path("moderation/", include("moderation.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as a file, so the page needs no inline script; its
    # template still carries a small inline <style>.
    path(
        "docs/",
        csp_update({"style-src": [UNSAFE_INLINE]})(SpectacularSwaggerSplitView.as_view(url_name="api-schema")),
        name="api-docs",
    ),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("favicon.ico", favicon, name="favicon"),
    path("api/", include(api_urlpatterns)),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
    path("moderation/", include("moderation.urls")),
    path("studio/", include("worlds.urls")),
    path("play/", include("play.urls")),
    path("memories/", include("memories.urls")),
    path("", include("gallery.urls")),
]
