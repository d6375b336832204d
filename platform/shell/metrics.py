"""/metrics for Prometheus: play's counters and histograms, and the sessions and worker slots the database holds.

It is for operators, not the public: without `METRICS_TOKEN` the page does not exist, and with it a scraper
sends `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import REGISTRY, GaugeMetricFamily
from prometheus_client.registry import Collector

# Imported for its effect: play's metrics exist (at zero) in this process before any browser has connected.
import play.metrics  # noqa: F401
from play.models import PlaySession, SessionStatus
from workers.selectors import workers_connected


class PlatformCollector(Collector):
    """Sessions by state and free worker slots by engine, counted when scraped (they live in the database)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        sessions = GaugeMetricFamily("worldloom_sessions", "Play sessions by state", labels=["state"])
        counted = dict(PlaySession.objects.values_list("status").annotate(count=Count("id")).order_by())
        for state in (SessionStatus.RUNNING, SessionStatus.PARKED, SessionStatus.QUEUED):
            sessions.add_metric([state.value], counted.get(state.value, 0))
        yield sessions
        slots = GaugeMetricFamily(
            "worldloom_worker_slots_free", "Free session slots of connected workers, by engine", labels=["engine"]
        )
        free: dict[str, int] = {}
        for engines, free_slots in workers_connected().values_list("engines", "free_slots"):
            for engine in engines:
                free[engine] = free.get(engine, 0) + free_slots
        for engine, count in sorted(free.items()):
            slots.add_metric([engine], count)
        yield slots


def metrics_registry() -> CollectorRegistry:
    """The registry to expose: every process's metrics added up when several processes serve (multiprocess
    mode), this process's otherwise; the database's counts on top."""
    registry = CollectorRegistry()
    if settings.PROMETHEUS_MULTIPROC_DIR:
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ProcessMetrics())
    registry.register(PlatformCollector())
    return registry


class _ProcessMetrics(Collector):
    """This process's own metrics (the default registry), without registering the platform's twice."""

    def collect(self) -> Iterator[object]:
        return REGISTRY.collect()


def metrics_allowed(authorization: str) -> bool:
    token = settings.METRICS_TOKEN
    return bool(token) and hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode())


def metrics_text() -> tuple[bytes, str]:
    return generate_latest(metrics_registry()), CONTENT_TYPE_LATEST
