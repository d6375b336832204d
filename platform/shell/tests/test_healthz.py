from __future__ import annotations

import pytest
from django.test import AsyncClient, Client
from django.utils import timezone
from pytest_django.fixtures import Settings

from workers.models import WorkerNode
from workers.services import worker_issue_token

pytestmark = pytest.mark.django_db(transaction=True)


def test_healthz_reports_every_service_as_json(client: Client) -> None:
    worker, _ = worker_issue_token(name="gpu-box-1")
    WorkerNode.objects.filter(pk=worker.pk).update(last_heartbeat_at=timezone.now(), engines=["raycaster"], slots=2)
    response = client.get("/healthz")
    assert response.status_code == 200
    health = response.json()
    assert health["status"] == "ok"
    assert health["database"]["ok"]
    assert health["channel_layer"]["ok"]
    assert health["celery_broker"]["ok"]
    assert health["inference_workers"]["connected"] == 1


def test_healthz_is_degraded_with_503_while_no_worker_can_take_a_session(client: Client) -> None:
    response = client.get("/healthz")  # no worker connected at all
    assert (response.status_code, response.json()["status"]) == (503, "degraded")
    worker, _ = worker_issue_token(name="full-box")
    WorkerNode.objects.filter(pk=worker.pk).update(last_heartbeat_at=timezone.now(), engines=["raycaster"], slots=0)
    response = client.get("/healthz")  # connected, but it hosts nothing
    assert (response.status_code, response.json()["status"]) == (503, "degraded")
    assert response.json()["database"]["ok"]


def test_healthz_counts_only_workers_that_heartbeat(client: Client) -> None:
    worker, _ = worker_issue_token(name="gpu-box-1")
    WorkerNode.objects.filter(pk=worker.pk).update(
        last_heartbeat_at=timezone.now(), engines=["raycaster"], slots=8, free_slots=3
    )
    worker_issue_token(name="silent-box")  # issued a token, never connected
    workers = client.get("/healthz").json()["inference_workers"]
    assert workers == {"connected": 1, "slots": 8, "free_slots": 3, "engines": ["raycaster"]}


@pytest.mark.asyncio
@pytest.mark.usefixtures("database_connections_closed_after")
async def test_healthz_fails_with_503_when_the_channel_layer_is_broken(settings: Settings) -> None:
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]}}
    }
    channel_layers.backends.clear()
    try:
        response = await AsyncClient().get("/healthz")
    finally:
        channel_layers.backends.clear()
    assert response.status_code == 503
    health = response.json()
    assert health["status"] == "failing"
    assert not health["channel_layer"]["ok"]
    assert health["database"]["ok"]


def test_healthz_is_not_cached(client: Client) -> None:
    assert "no-cache" in client.get("/healthz")["Cache-Control"]


@pytest.mark.asyncio
async def test_livez_answers_through_the_application_daphne_serves_whatever_the_workers() -> None:
    from channels.testing import HttpCommunicator

    from config.routing import application

    response = await HttpCommunicator(application, "GET", "/livez").get_response()
    assert (response["status"], response["body"]) == (200, b"ok")
