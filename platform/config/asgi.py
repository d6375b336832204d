"""The ASGI application daphne serves (`daphne config.asgi:application`), after checking the services."""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Django must be set up before the consumers (and the models they import) are loaded.
django.setup(set_prefix=False)

from common.preflight import services_reachable_or_exit  # noqa: E402

services_reachable_or_exit()

from config.routing import application  # noqa: E402

__all__ = ("application",)
