from __future__ import annotations

from django.urls import path

from worlds import views

app_name = "worlds"
urlpatterns = [path("", views.studio, name="studio")]
