"""The platform as several processes (`manage.py run_cluster`): two daphnes behind HAProxy, two workers, Celery.

Browsers connect to a chosen daphne directly where a test needs them apart, and through the balancer where it
needs the balancer's choice; every process shares the test database and Redis.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from django.conf import settings
from django.db import connection

from accounts.tests.factories import UserFactory
from play.models import PlaySession, SessionEvent, SessionStatus
from play.tests.factories import PlaySessionFactory, WorldVersionFactory
from tests.fixtures import ROOT, Endpoint, Player, cookie_for, free_port, platform_environment, play, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.services]

STORY = json.loads((ROOT / "worlds" / "demo_content" / "dark-lighthouse.json").read_text())
# The raycaster: exact frames, light on a 2-core machine running seven processes.
GAME_STORY = {**STORY, "world": {**STORY["world"], "engine": "raycaster"}}
LIVE_STORY = {**STORY, "world": {**STORY["world"], "engine": "raycaster", "category": "live"}}


@dataclass
class RunningCluster:
    process: subprocess.Popen[bytes]
    balancer: Endpoint
    daphnes: list[Endpoint]
    pids: dict[str, int]  # by process name: daphne1, worker2, haproxy …

    def kill(self, name: str) -> None:
        os.kill(self.pids[name], signal.SIGKILL)


@pytest.fixture
def cluster(transactional_db: None, tmp_path: Path) -> Iterator[RunningCluster]:
    if shutil.which("haproxy") is None or not settings.REDIS_URL or connection.vendor != "postgresql":
        if os.environ.get("CI_REQUIRE_SERVICES"):
            pytest.fail("CI runs the cluster: it needs haproxy, PostgreSQL and REDIS_URL")
        pytest.skip("a cluster needs haproxy (apt-get install haproxy), PostgreSQL and REDIS_URL (.ci/run has them)")
    port = free_port()
    environment = platform_environment(PLAY_PARK_AFTER_SECONDS="2", WORKER_HEARTBEAT_SECONDS="1")
    command = [sys.executable, "manage.py", "run_cluster", "--port", str(port), "--state-folder", str(tmp_path)]
    process = subprocess.Popen(command, cwd=ROOT, env=environment)
    try:
        state_file = tmp_path / "cluster.json"
        wait_until(lambda: state_file.exists() or process.poll() is not None, timeout_seconds=120)
        assert process.poll() is None, "the cluster did not start"
        state = json.loads(state_file.read_text())
        balancer = Endpoint(port)
        wait_until(lambda: workers_connected(balancer) == 2, timeout_seconds=120)
        yield RunningCluster(
            process=process,
            balancer=balancer,
            daphnes=[Endpoint(item["port"]) for item in state["processes"] if item["role"] == "daphne"],
            pids={item["name"]: item["pid"] for item in state["processes"]},
        )
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)


def workers_connected(endpoint: Endpoint) -> int:
    try:
        return int(requests.get(f"{endpoint.url}/healthz", timeout=5).json()["inference_workers"]["connected"])
    except (requests.RequestException, ValueError, KeyError):
        return 0


def test_a_live_world_s_players_on_two_daphnes_see_one_stream_and_one_vote_and_a_killed_worker_moves_it(
    cluster: RunningCluster,
) -> None:
    owner, participant = UserFactory(), UserFactory()
    session = PlaySessionFactory(version=WorldVersionFactory(document=LIVE_STORY), owner=owner, is_live=True)
    session.participants.add(participant)
    first, second = cluster.daphnes
    owner_cookie, participant_cookie = cookie_for(owner), cookie_for(participant)

    async def watch_and_vote(player: Player) -> dict[int, bytes]:
        await player.read_until(lambda p: p.offered() and len(p.frames) >= 5, seconds=60)
        await player.send("choice", index=0)
        await player.read_until(lambda p: p.last("votes") and sum(p.last("votes")["tally"]) == 2, seconds=30)
        return {number: image for number, _, image in player.frames}

    async def both() -> list[dict[int, bytes]]:
        return list(
            await asyncio.gather(
                play(first, session, owner_cookie, watch_and_vote),
                play(second, session, participant_cookie, watch_and_vote),
            )
        )

    seen_first, seen_second = asyncio.run(both())
    common = set(seen_first) & set(seen_second)
    # One stream: frames the two daphnes both relayed are the same frames, byte for byte.
    assert len(common) >= 3 and all(seen_first[number] == seen_second[number] for number in common)

    async def watch_through_a_failover(player: Player) -> tuple[Any, list[int], int]:
        await player.read_until(lambda p: len(p.frames) >= 3, seconds=30)
        hosting = await asyncio.to_thread(
            lambda: PlaySession.objects.select_related("worker").get(pk=session.pk).worker
        )
        await asyncio.to_thread(cluster.kill, hosting.name)
        killed_at = len(player.frames)
        await player.read_until(lambda p: len(p.frames) >= killed_at + 5, seconds=60)
        return hosting, [number for number, _, _ in player.frames], killed_at

    hosting, numbers, killed_at = asyncio.run(
        play(cluster.balancer, session, cookie_for(owner), watch_through_a_failover)
    )
    assert PlaySession.objects.get(pk=session.pk).worker_id not in (None, hosting.pk)
    assert numbers == sorted(set(numbers)) and numbers[-1] > numbers[killed_at - 1]


def test_a_killed_daphne_s_session_is_parked_and_resumes_through_the_balancer_with_nothing_lost(
    cluster: RunningCluster,
) -> None:
    session = PlaySessionFactory(version=WorldVersionFactory(document=GAME_STORY))
    cookie = cookie_for(session.owner)
    first = cluster.daphnes[0]

    async def press_and_watch(player: Player) -> int:
        await player.read_until(lambda p: len(p.frames) >= 3, seconds=60)
        sent = await player.send("key_down", key="KeyW")
        await player.read_until(lambda p: p.last("accepted") and p.last("accepted")["seq"] == sent, seconds=20)
        await player.read_until(lambda p: p.frames[-1][1] >= p.last("accepted")["sequence"], seconds=20)
        return player.frames[-1][0]

    last_seen = asyncio.run(play(first, session, cookie, press_and_watch))
    assert SessionEvent.objects.filter(session=session, kind="key_down").count() == 1
    # The daphne dies with the browser's socket open: no disconnect is ever handled for it.
    cluster.kill("daphne1")
    started = time.monotonic()
    wait_until(lambda: PlaySession.objects.get(pk=session.pk).status == SessionStatus.PARKED, timeout_seconds=30)
    parked_after = time.monotonic() - started

    async def come_back(player: Player) -> list[int]:
        player.sequence = 0  # the same page numbering from the start: its resend of input 1 is a resend
        resent = await player.send("key_down", key="KeyW")
        accepted = await player.read_until(lambda p: p.last("accepted"), seconds=60)
        assert accepted["seq"] == resent and accepted["duplicate"]
        await player.read_until(lambda p: len(p.frames) >= 3, seconds=60)
        return [number for number, _, _ in player.frames]

    numbers = asyncio.run(play(cluster.balancer, session, cookie, come_back))
    assert parked_after < 20
    assert min(numbers) > last_seen and numbers == sorted(numbers)
    assert SessionEvent.objects.filter(session=session, kind="key_down").count() == 1


def test_the_cluster_stops_every_process_within_ten_seconds_of_sigterm(cluster: RunningCluster) -> None:
    started = time.monotonic()
    cluster.process.send_signal(signal.SIGTERM)
    cluster.process.wait(timeout=15)
    assert time.monotonic() - started < 10
    for name, pid in cluster.pids.items():
        assert not pid_alive(pid), f"{name} outlived the cluster"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child that exited but was not reaped yet is a zombie: gone for every purpose here.
    status = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return status not in ("Z", "X")
