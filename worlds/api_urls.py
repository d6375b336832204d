"""The authoring API's routes, mounted under /api/."""

from __future__ import annotations

from django.urls import path
from rest_framework.routers import SimpleRouter

from worlds import apis

router = SimpleRouter()
router.register("worlds", apis.WorldViewSet, basename="world")
router.register("characters", apis.CharacterViewSet, basename="character")
router.register("lorebooks", apis.LorebookViewSet, basename="lorebook")
router.register("hooks", apis.HookViewSet, basename="hook")
router.register("stories", apis.StoryViewSet, basename="story")
router.register("versions", apis.VersionViewSet, basename="version")

urlpatterns = [
    path("versions/<int:pk>/remix/", apis.VersionRemixApi.as_view(), name="version-remix"),
    path("imports/", apis.ContentImportApi.as_view(), name="content-import"),
    path("exports/<slug:kind>/<int:pk>/", apis.ContentExportApi.as_view(), name="content-export"),
    *router.urls,
]
