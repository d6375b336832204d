"""Faults injected into real processes: daphne, Redis and PostgreSQL restarted, a Celery child killed
mid-task, a browser that stops reading. Each uses private services on free ports (the machine's shared Redis
and PostgreSQL are never touched) and bounds every wait. The worker killed mid-session is in
tests/test_play_full_stack.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import websockets
from celery import Celery
from django.db import transaction
from django.db.models import F

from accounts.tests.factories import UserFactory
from common.tasks import worker_roundtrip
from play.consumers import FRAMES_IN_FLIGHT
from play.models import PlaySession, SessionEvent
from play.tests.factories import PlaySessionFactory, WorldVersionFactory
from tests.faults import celery_worker, child_pids, private_postgres, private_redis, resident_kib, stop
from tests.fixtures import (
    ROOT,
    Player,
    choice_leading_to,
    cookie_for,
    free_port,
    platform_environment,
    start_platform,
    wait_until,
)
from tests.test_play_full_stack import DEMO_STORY, brightness, worker_process
from worlds.tests.factories import CharacterFactory

pytestmark = pytest.mark.slow


async def connected_player(url: str, origin: str, cookie: str, seconds: float = 30) -> Any:
    """A WebSocket to the play endpoint, retried (bounded) while the platform comes back, as the page does."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return await websockets.connect(
                url, additional_headers={"Cookie": cookie, "Origin": origin}, open_timeout=5
            )
        except (OSError, TimeoutError, websockets.InvalidHandshake):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.25)


def restart_told(player: Player, session: PlaySession, newest: int, logs: Path) -> str:
    """What a player saw after the restart and what the processes logged, for a failure to say why."""
    events = [
        (event.sequence, event.client_sequence, event.applied_tick)
        for event in SessionEvent.objects.filter(session=session).order_by("sequence")
    ]
    logged = {path.name: path.read_text(errors="replace")[-1500:] for path in sorted(logs.glob("*.log"))}
    return (
        f"no frame showed input {newest} within 30 s; frames (number, input shown) "
        f"{[frame[:2] for frame in player.frames][-5:]} of {len(player.frames)}; "
        f"messages {[message['type'] for message in player.messages]}; "
        f"events (number, client number, tick applied) {events}; logs {logged}"
    )


@pytest.mark.django_db(transaction=True)
def test_after_daphne_restarts_the_browser_resumes_and_no_input_is_lost_or_applied_twice(tmp_path: Path) -> None:
    port = free_port()
    platform = start_platform("--no-in-process-worker", port=port, log=tmp_path / "platform-before.log")
    # A process of its own: it outlives daphne.
    worker = worker_process(platform, "survivor", tmp_path / "worker.log")
    try:
        wait_until(lambda: platform.health()["inference_workers"]["connected"] == 1, timeout_seconds=30)
        session = PlaySessionFactory(version=WorldVersionFactory(document=DEMO_STORY))
        cookie = cookie_for(session.owner)
        url = f"{platform.ws_url}/ws/play/{session.pk}/"
        # The page's state kept across reconnects: inputs by client sequence until the platform accepts them.
        sent: dict[int, dict[str, Any]] = {}

        async def before_the_crash() -> tuple[int, float]:
            async with await connected_player(url, platform.url, cookie) as socket:
                player = Player(socket)
                await player.read_until(lambda p: len(p.frames) >= 2 and p.offered(), seconds=40)
                for kind, fields in (
                    ("prompt", {"text": "make it night"}),
                    ("choice", {"index": await asyncio.to_thread(choice_leading_to, session, "arrival", "ask-eve")}),
                ):
                    seq = await player.send(kind, **fields)
                    sent[seq] = {"type": kind, "seq": seq, **fields}
                    await player.read_until(
                        lambda p, seq=seq: any(m["type"] == "accepted" and m["seq"] == seq for m in p.messages)
                    )
                await player.read_until(lambda p: (c := p.offered()) and c["beat"] == "ask-eve", seconds=40)
                # Wait until the world shows the night, so the state to restore is the changed one.
                await player.read_until(lambda p: p.frames[-1][1] >= 3 and len(p.frames) > 10)
                night = brightness(player.frames[-1][2])
                # Pressed as daphne dies: logged or not, the page has no answer yet and sends it again.
                seq = await player.send("key_down", key="KeyA")
                sent[seq] = {"type": "key_down", "key": "KeyA", "seq": seq}
                platform.process.send_signal(signal.SIGKILL)
                platform.process.wait(timeout=10)
                with contextlib.suppress(websockets.ConnectionClosed, TimeoutError):
                    await player.read_until(lambda _: False, seconds=5)
                return max(number for number, _, _ in player.frames), night

        last_frame, night = asyncio.run(before_the_crash())
        # Released while the platform is down: the page queues it.
        sent[4] = {"type": "key_up", "key": "KeyA", "seq": 4}
        restarted_at = time.monotonic()
        platform = start_platform("--no-in-process-worker", port=port, log=tmp_path / "platform-after.log")

        async def after_the_restart() -> Player:
            async with await connected_player(url, platform.url, cookie) as socket:
                player = Player(socket)
                player.sequence = 4
                # The page resends what it has no `accepted` for; the second input's answer counts as lost
                # with the old connection, so it is sent again too and must be recognised as a duplicate.
                for seq in (2, 3, 4):
                    await socket.send(json.dumps(sent[seq]))
                await player.read_until(lambda p: len([m for m in p.messages if m["type"] == "accepted"]) == 3)
                await player.read_until(lambda p: (c := p.offered()) and c["beat"] == "ask-eve", seconds=30)
                newest = max(m["sequence"] for m in player.messages if m["type"] == "accepted")
                try:
                    await player.read_until(lambda p: p.frames and p.frames[-1][1] >= newest, seconds=30)
                except TimeoutError:
                    told = await asyncio.to_thread(restart_told, player, session, newest, tmp_path)
                    raise AssertionError(told) from None
                return player

        player = asyncio.run(after_the_restart())
        recovered = time.monotonic() - restarted_at
        accepted = {m["seq"]: m for m in player.messages if m["type"] == "accepted"}
        assert accepted[2]["duplicate"] is True
        assert accepted[4]["duplicate"] is False
        numbers = [number for number, _, _ in player.frames]
        assert numbers == sorted(set(numbers))
        assert numbers[0] > last_frame, "frame numbers go on growing across the restart"
        assert abs(brightness(player.frames[-1][2]) - night) < 15, "the world is restored as it was, at night"
        events = list(SessionEvent.objects.filter(session=session).order_by("sequence"))
        assert [event.sequence for event in events] == list(range(1, len(events) + 1))
        by_player = [event.client_sequence for event in events if event.player_id is not None]
        assert sorted(by_player) == [1, 2, 3, 4], "every input the page sent is logged exactly once"
        wait_until(lambda: not SessionEvent.objects.filter(session=session, applied_tick__isnull=True).exists())
        assert recovered < 45
    finally:
        worker.kill()
        worker.wait()
        platform.stop()


class ReconnectingPage:
    """The play page's connection logic: reconnect (bounded) when the socket closes, resend what has no
    `accepted` yet with its original client sequence, and keep acknowledging frames."""

    def __init__(self, url: str, origin: str, cookie: str) -> None:
        self.url, self.origin, self.cookie = url, origin, cookie
        self.unconfirmed: dict[int, dict[str, Any]] = {}
        self.player: Player | None = None
        self.frames: list[tuple[int, int, bytes]] = []
        self.reconnections = 0

    async def open(self, seconds: float = 30) -> Player:
        socket = await connected_player(self.url, self.origin, self.cookie, seconds=seconds)
        sequence = self.player.sequence if self.player is not None else 0
        self.player = Player(socket)
        self.player.sequence = sequence
        self.player.frames = self.frames  # one list across connections, to check numbers only grow
        for message in self.unconfirmed.values():
            await socket.send(json.dumps(message))
        return self.player

    async def send(self, kind: str, **fields: Any) -> int:
        assert self.player is not None
        self.player.sequence += 1
        message = {"type": kind, "seq": self.player.sequence, **fields}
        self.unconfirmed[self.player.sequence] = message
        with contextlib.suppress(websockets.ConnectionClosed):
            await self.player.connection.send(json.dumps(message))
        return self.player.sequence

    async def read_until(self, condition: Any, seconds: float) -> Any:
        """Read, reconnecting whenever the socket closes, until `condition(player)` holds."""
        deadline = time.monotonic() + seconds
        while True:
            assert self.player is not None
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"condition not met within {seconds} s")
            try:
                return await self.player.read_until(self.confirming(condition), seconds=left)
            except websockets.ConnectionClosed:
                self.reconnections += 1
                await self.player.connection.close()
                await self.open(seconds=max(deadline - time.monotonic(), 1))

    def confirming(self, condition: Any) -> Any:
        def check(player: Player) -> Any:
            for message in player.messages:
                if message["type"] == "accepted":
                    self.unconfirmed.pop(message["seq"], None)
            return condition(player)

        return check


@pytest.mark.django_db(transaction=True)
def test_after_redis_restarts_sessions_and_celery_recover_within_thirty_seconds() -> None:
    with private_redis() as redis_server:
        environment = platform_environment(
            REDIS_URL=redis_server.url, CELERY_BROKER_URL=redis_server.url, CELERY_RESULT_BACKEND=redis_server.url
        )
        platform = start_platform("--in-process-worker", environment=environment)
        queue = f"faults-{secrets.token_hex(4)}"
        celery, _ = celery_worker(queue, environment)
        client = Celery(
            "worldloom-fault-client", broker=redis_server.url, backend=redis_server.url, set_as_current=False
        )
        try:
            assert client.send_task(worker_roundtrip.name, args=["before"], queue=queue).get(timeout=60)["nonce"] == (
                "before"
            )
            session = PlaySessionFactory()
            page = ReconnectingPage(f"{platform.ws_url}/ws/play/{session.pk}/", platform.url, cookie_for(session.owner))

            async def through_the_restart() -> float:
                await page.open()
                await page.read_until(lambda p: len(p.frames) >= 3, seconds=30)
                await page.send("key_down", key="KeyW")
                await page.read_until(lambda p: p.frames[-1][1] >= 1, seconds=15)
                last_before = page.frames[-1][0]
                redis_server.kill()
                await page.send("key_up", key="KeyW")  # sent while Redis is down: must arrive once
                await asyncio.sleep(2)
                restarted_at = time.monotonic()
                await asyncio.to_thread(redis_server.start)
                await page.read_until(lambda p: p.frames[-1][0] > last_before + 5 and p.frames[-1][1] >= 2, seconds=30)
                return time.monotonic() - restarted_at

            recovered = asyncio.run(through_the_restart())
            assert recovered < 30
            assert not page.unconfirmed
            numbers = [number for number, _, _ in page.frames]
            assert numbers == sorted(set(numbers))
            events = list(SessionEvent.objects.filter(session=session).order_by("sequence"))
            assert [(event.sequence, event.client_sequence) for event in events] == [(1, 1), (2, 2)]
            started = time.monotonic()
            assert client.send_task(worker_roundtrip.name, args=["after"], queue=queue).get(timeout=30)["nonce"] == (
                "after"
            )
            assert time.monotonic() - started < 30
            assert platform.health()["status"] == "ok"
        finally:
            client.close()
            stop(celery)
            platform.stop()


def acquaintance_due_for_a_summary() -> int:
    """A player who told a character twenty things: one consolidation into a summary is due."""
    from inference.language.embedding import HashedWordsEmbedder
    from memories.models import Acquaintance
    from memories.services import exchange_record
    from memories.tasks import memories_consolidate

    character, player = CharacterFactory(), UserFactory()
    embedder = HashedWordsEmbedder()
    # The twentieth exchange queues the consolidation; here it is the test that sends it, to its own worker.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memories_consolidate, "delay", lambda *_: None)
        for turn in range(1, 21):
            text = f"I counted {turn} gulls on the pier."
            exchange_record(character=character, player=player, memories=[(text, 0.5, embedder.embed([text])[0])])
    return Acquaintance.objects.get(character=character, player=player).pk


@pytest.mark.django_db(transaction=True)
def test_a_celery_child_killed_mid_task_runs_it_again_once_and_a_duplicate_delivery_has_one_effect() -> None:
    from memories.models import Acquaintance, Memory, MemoryKind
    from memories.tasks import memories_consolidate

    with private_redis() as redis_server:
        environment = platform_environment(CELERY_BROKER_URL=redis_server.url, CELERY_RESULT_BACKEND=redis_server.url)
        queue = f"faults-{secrets.token_hex(4)}"
        celery, output = celery_worker(queue, environment)
        client = Celery(
            "worldloom-fault-client", broker=redis_server.url, backend=redis_server.url, set_as_current=False
        )
        try:
            wait_until(lambda: "ready." in output.text(), timeout_seconds=60)
            killed_during = acquaintance_due_for_a_summary()
            summaries = Memory.objects.filter(acquaintance_id=killed_during, kind=MemoryKind.SUMMARY)
            # The test holds the acquaintance's row, so the task waits inside its transaction (after loading
            # MiniLM) until the child is killed there; the lock goes with the test's transaction.
            with transaction.atomic():
                Acquaintance.objects.filter(pk=killed_during).update(turns=F("turns"))
                result = client.send_task(memories_consolidate.name, args=[killed_during], queue=queue)
                received = f"{memories_consolidate.name}[{result.id}] received"
                wait_until(lambda: received in output.text(), timeout_seconds=30)
                time.sleep(4)
                (child,) = child_pids(celery.pid)
                os.kill(child, signal.SIGKILL)
                wait_until(lambda: "WorkerLostError" in output.text(), timeout_seconds=20)
                assert not summaries.exists()
            assert result.get(timeout=90) is True, "the task ran again on a new child and wrote the summary"
            assert summaries.count() == 1

            delivered_twice = acquaintance_due_for_a_summary()
            task_id = f"consolidate-{delivered_twice}"
            first, _ = (
                client.send_task(memories_consolidate.name, args=[delivered_twice], queue=queue, task_id=task_id)
                for _ in range(2)
            )
            first.get(timeout=60)
            wait_until(
                lambda: output.text().count(f"Task {memories_consolidate.name}[{task_id}] succeeded") == 2,
                timeout_seconds=60,
            )
            assert Memory.objects.filter(acquaintance_id=delivered_twice, kind=MemoryKind.SUMMARY).count() == 1
            assert summaries.count() == 1
        finally:
            client.close()
            stop(celery)


@pytest.mark.django_db(transaction=True)
def test_a_reader_that_stops_for_thirty_seconds_is_held_to_a_bounded_buffer_and_slows_no_one() -> None:
    platform = start_platform("--in-process-worker")
    try:
        stalled_session, playing_session = PlaySessionFactory(), PlaySessionFactory()
        urls = [f"{platform.ws_url}/ws/play/{session.pk}/" for session in (stalled_session, playing_session)]
        cookies = [cookie_for(session.owner) for session in (stalled_session, playing_session)]

        async def both() -> dict[str, Any]:
            async with (
                await connected_player(urls[0], platform.url, cookies[0]) as stalled_socket,
                await connected_player(urls[1], platform.url, cookies[1]) as playing_socket,
            ):
                stalled, playing = Player(stalled_socket), Player(playing_socket)
                await asyncio.gather(
                    *(p.read_until(lambda p: len(p.frames) >= 5, seconds=40) for p in (stalled, playing))
                )

                async def frames_per_second(seconds: float) -> float:
                    before = len(playing.frames)
                    with contextlib.suppress(TimeoutError):
                        await playing.read_until(lambda _: False, seconds=seconds)
                    return (len(playing.frames) - before) / seconds

                rate_before = await frames_per_second(5)
                stalled_at_frame, memory_before = stalled.frames[-1][0], resident_kib(platform.process.pid)
                # The stalled reader neither reads nor acknowledges for 30 s; the other keeps playing.
                await frames_per_second(15)
                rate_during = await frames_per_second(15)
                memory_after = resident_kib(platform.process.pid)
                resumed_at, caught_up = time.monotonic(), len(stalled.frames)
                # At 20 frames a second the session moved on by hundreds of frames while nobody read it.
                await stalled.read_until(lambda p: p.frames[-1][0] > stalled_at_frame + 300, seconds=5)
                latency = time.monotonic() - resumed_at
                first_live = len(stalled.frames) - 1
                await stalled.read_until(lambda p: len(p.frames) > first_live + 5, seconds=10)
                after = [number for number, _, _ in stalled.frames[first_live:]]
                return {
                    "rate_before": rate_before,
                    "rate_during": rate_during,
                    "latency": latency,
                    "memory_growth_kib": memory_after - memory_before,
                    "backlog_read": first_live - caught_up,
                    "after": after,
                }

        seen = asyncio.run(both())
        # The frames in flight (FRAMES_IN_FLIGHT ticks of them) were sent and the newest waited: nothing of the
        # 30 s backlog is replayed.
        assert seen["backlog_read"] <= FRAMES_IN_FLIGHT + 1, seen
        assert seen["latency"] < 1, seen
        assert seen["after"][1] - seen["after"][0] <= 3, "the frame it got was the live one, the next follows it"
        assert seen["memory_growth_kib"] < 30 * 1024, seen
        assert seen["rate_during"] >= 0.5 * seen["rate_before"], seen
    finally:
        platform.stop()


# Run against the private database in a process of its own: a player, a session of a world, and a sign-in.
PLAYER_IN_PRIVATE_DATABASE = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.utils import timezone
from accounts.services import user_create
from play.models import PlaySession
from worlds.documents import world_document
from worlds.models import World, WorldVersion
owner = user_create(username="outage", email="", password="outage-password-1")
world = World.objects.create(owner=owner, title="Outage", slug="outage", logline="x", engine_parameters={"seed": 3})
version = WorldVersion.objects.create(world=world, number=1, document=world_document(world), published_by=owner,
                                      status="approved")
session = PlaySession.objects.create(version=version, owner=owner, engine="raycaster", queued_at=timezone.now())
store = SessionStore()
store[SESSION_KEY], store[BACKEND_SESSION_KEY] = str(owner.pk), "django.contrib.auth.backends.ModelBackend"
store[HASH_SESSION_KEY] = owner.get_session_auth_hash()
store.save()
print(session.pk, store.session_key)
"""


def test_while_postgresql_restarts_requests_fail_fast_and_clearly_then_recover() -> None:
    with private_postgres() as postgres:
        environment = platform_environment(DATABASE_URL=postgres.url())
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--no-input", "--verbosity", "0"],
            cwd=ROOT,
            env=environment,
            check=True,
            timeout=180,
        )
        made = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", PLAYER_IN_PRIVATE_DATABASE],
            cwd=ROOT,
            env=environment,
            check=True,
            timeout=120,
            capture_output=True,
            text=True,
        )
        session_id, session_key = made.stdout.split()[-2:]
        platform = start_platform("--no-in-process-worker", environment=environment)

        async def input_during_the_outage() -> dict[str, Any]:
            """A player's socket stays open while the database goes; an input then is refused, not lost quietly."""
            socket = await connected_player(
                f"{platform.ws_url}/ws/play/{session_id}/", platform.url, f"sessionid={session_key}"
            )
            player = Player(socket)
            # Queued (no worker runs here): the platform has finished with the socket's arrival.
            await player.read_until(lambda p: (status := p.last("status")) and status["state"] == "queued")
            await asyncio.to_thread(postgres.stop)
            await player.send("key_down", key="KeyW")
            refused = await player.read_until(lambda p: p.last("error"), seconds=15)
            await socket.close()
            return refused

        try:
            assert requests.get(f"{platform.url}/", timeout=10).status_code == 200
            refused = asyncio.run(input_during_the_outage())
            assert refused["seq"] == 1 and "database is unavailable" in refused["error"]
            # The home page was drawn a moment ago: its rows come from the cache, and nothing else of it needs
            # the database for someone not signed in. A page that must read it says the database is away.
            assert requests.get(f"{platform.url}/", timeout=10).status_code == 200
            for path in ("/worlds/foghaven/", "/healthz", "/api/gallery/worlds/"):
                started = time.monotonic()
                answer = requests.get(f"{platform.url}{path}", timeout=30)
                elapsed = time.monotonic() - started
                assert answer.status_code == 503, (path, answer.status_code, answer.text[:500])
                assert "database" in answer.text, "a sentence that says what is wrong, not a traceback page"
                assert elapsed < 3, (path, elapsed)
            postgres.start()
            # Waited for on a page that reads the database: the home page's rows may still be the cached ones.
            listing = f"{platform.url}/api/gallery/worlds/"
            wait_until(lambda: requests.get(listing, timeout=10).status_code == 200, timeout_seconds=15)
            # No worker runs here, so health stays degraded for that; the database part must be back.
            health = platform.health()
            assert health["database"]["ok"] and health["inference_workers"]["connected"] == 0
            # No half-written state: the refused input left no event behind.
            count = (
                "from play.models import SessionEvent; "
                f"print(SessionEvent.objects.filter(session='{session_id}').count())"
            )
            counted = subprocess.run(
                [sys.executable, "manage.py", "shell", "-c", count],
                cwd=ROOT,
                env=environment,
                check=True,
                timeout=120,
                capture_output=True,
                text=True,
            )
            assert counted.stdout.split()[-1] == "0"
        finally:
            platform.stop()
