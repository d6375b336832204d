"""The Celery application: configured from Django's settings (CELERY_*), tasks discovered in every app."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("worldloom")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def refuse_to_start_without_services(**_: object) -> None:
    from common.preflight import services_reachable_or_exit

    services_reachable_or_exit()
