from __future__ import annotations

from django.urls import path

from gallery import views

app_name = "gallery"
urlpatterns = [
    path("", views.home, name="home"),
    path("search/", views.search, name="search"),
    path("content-settings/", views.content_settings, name="settings"),
    path("gallery/<slug:category>/", views.category_page, name="category"),
    path("worlds/<slug:slug>/", views.world_page, name="world"),
    path("worlds/<slug:slug>/image", views.world_image, name="world_image"),
    path("worlds/<slug:slug>/like/", views.world_like, name="world_like"),
    path("creators/<str:username>/", views.creator_page, name="creator"),
    path("creators/<str:username>/follow/", views.creator_follow, name="creator_follow"),
]
