"""The gallery API's routes, mounted under /api/gallery/."""

from __future__ import annotations

from django.urls import path

from gallery import apis

urlpatterns = [
    path("home/", apis.GalleryHomeApi.as_view(), name="gallery-home"),
    path("worlds/", apis.GalleryWorldListApi.as_view(), name="gallery-world-list"),
    path("worlds/<slug:slug>/", apis.GalleryWorldDetailApi.as_view(), name="gallery-world-detail"),
    path("worlds/<slug:slug>/like/", apis.WorldLikeApi.as_view(), name="gallery-world-like"),
    path("creators/<str:username>/", apis.CreatorDetailApi.as_view(), name="gallery-creator-detail"),
    path("creators/<str:username>/follow/", apis.CreatorFollowApi.as_view(), name="gallery-creator-follow"),
    path("settings/", apis.ContentSettingsApi.as_view(), name="gallery-settings"),
]
