"""/metrics: operators' figures for a scraper with the token, and no page for anyone else."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from play.tests.factories import PlaySessionFactory
from workers.models import WorkerNode

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("authorization", ["", "Bearer wrong", "Bearer", "secret-token"])
@override_settings(METRICS_TOKEN="secret-token")
def test_without_the_token_there_is_no_metrics_page(authorization: str) -> None:
    assert Client().get("/metrics", headers={"Authorization": authorization}).status_code == 404


@override_settings(METRICS_TOKEN="")
def test_without_a_configured_token_there_is_no_metrics_page_at_all() -> None:
    assert Client().get("/metrics", headers={"Authorization": "Bearer "}).status_code == 404


@override_settings(METRICS_TOKEN="secret-token")
def test_a_scraper_with_the_token_reads_sessions_slots_and_play_metrics() -> None:
    for status in ("running", "running", "parked", "queued", "ended"):
        PlaySessionFactory(status=status)
    now = timezone.now()
    WorkerNode.objects.create(
        name="w1", token_hash="a" * 64, token_expires_at=now, engines=["raycaster", "worldmodel"], free_slots=3,
        slots=4, connected_at=now, last_heartbeat_at=now,
    )  # fmt: skip
    WorkerNode.objects.create(
        name="w2", token_hash="b" * 64, token_expires_at=now, engines=["raycaster"], free_slots=2, slots=2,
        connected_at=now, last_heartbeat_at=now,
    )  # fmt: skip
    response = Client().get("/metrics", headers={"Authorization": "Bearer secret-token"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    for line in (
        'worldloom_sessions{state="running"} 2.0',
        'worldloom_sessions{state="parked"} 1.0',
        'worldloom_sessions{state="queued"} 1.0',
        'worldloom_worker_slots_free{engine="raycaster"} 5.0',
        'worldloom_worker_slots_free{engine="worldmodel"} 3.0',
    ):
        assert line in text
    for name in (
        "worldloom_input_to_frame_seconds_bucket",
        "worldloom_frame_interval_seconds_count",
        "worldloom_frames_dropped_total",
        "worldloom_inputs_refused_total",
        "worldloom_reply_first_line_seconds_count",
    ):
        assert name in text
