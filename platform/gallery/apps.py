from __future__ import annotations

from django.apps import AppConfig


class GalleryConfig(AppConfig):
    """Where players find what to play: Games, Stories, Characters and Live."""

    name = "gallery"
