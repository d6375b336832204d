from __future__ import annotations

from django.urls import path

from moderation import views

app_name = "moderation"
urlpatterns = [path("", views.queue, name="queue")]
