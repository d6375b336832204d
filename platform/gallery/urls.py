from __future__ import annotations

from django.urls import path

from gallery import views

app_name = "gallery"
urlpatterns = [
    path("", views.home, name="home"),
    path("gallery/<slug:category>/", views.category_page, name="category"),
]
