"""The site's URLs: pages, the JSON API with its OpenAPI schema, and the health check."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from common.views import healthz

api_urlpatterns = [
    path("accounts/", include("accounts.apis")),
    path("", include("worlds.api_urls")),
    path("gallery/", include("gallery.api_urls")),
    path("moderation/", include("moderation.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("api/", include(api_urlpatterns)),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
    path("moderation/", include("moderation.urls")),
    path("studio/", include("worlds.urls")),
    path("play/", include("stories.urls")),
    path("memories/", include("memories.urls")),
    path("", include("gallery.urls")),
]
