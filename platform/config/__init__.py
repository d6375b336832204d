"""The site shell: settings, URLs, the ASGI application and the Celery application."""

from __future__ import annotations

# Loaded with Django so that @shared_task binds to our Celery app (the Celery documentation's arrangement).
from config.celery import app as celery_app

__all__ = ("celery_app",)
