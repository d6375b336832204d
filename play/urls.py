from __future__ import annotations

from django.urls import path

from play import views

app_name = "play"
urlpatterns = [
    path("session/<uuid:session_id>/", views.session_page, name="session"),
    path("<slug:slug>/", views.play, name="play"),
]
