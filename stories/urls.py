from __future__ import annotations

from django.urls import path

from stories import views

app_name = "stories"
urlpatterns = [
    path("session/<uuid:session_id>/", views.session_page, name="session"),
    path("<slug:slug>/", views.play, name="play"),
]
