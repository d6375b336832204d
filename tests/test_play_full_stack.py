"""Play end to end: a real daphne, real worker processes, real WebSocket clients (Redis channel layer in CI)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import websockets
from PIL import Image, ImageStat

from accounts.tests.factories import UserFactory
from inference.engine import RaycastEngine
from inference.play.host import SessionHost
from inference.protocol import ReplayedInput, SessionOpen
from inference.world.state import from_snapshot
from play.models import PlaySession, SessionEvent, SessionSnapshot
from play.tests.factories import PlaySessionFactory, WorldVersionFactory
from tests.fixtures import (
    ROOT,
    LivePlatform,
    Player,
    choice_leading_to,
    cookie_for,
    platform_environment,
    play,
    start_platform,
    wait_until,
)
from workers.services import worker_issue_token

pytestmark = pytest.mark.slow

DEMO_STORY = json.loads((ROOT / "worlds" / "demo_content" / "dark-lighthouse.json").read_text())
# The demo story ships on the world model; these sessions (the factory's) run the raycaster, whose frames are
# exact and fast on a busy CI machine, so the version says so too.
DEMO_STORY["world"]["engine"] = "raycaster"


def brightness(jpeg: bytes) -> float:
    return ImageStat.Stat(Image.open(io.BytesIO(jpeg)).convert("L")).mean[0]


def test_a_player_sees_frames_moves_changes_the_world_and_picks_a_choice(live_platform: LivePlatform) -> None:
    version = WorldVersionFactory(document=DEMO_STORY)
    session = PlaySessionFactory(version=version)

    async def script(player: Player) -> None:
        await player.read_until(lambda p: len(p.frames) >= 3)
        assert player.last("welcome")["role"] == "player"
        still = player.frames[-1][2]
        await player.send("key_down", key="KeyW")
        accepted = await player.read_until(lambda p: p.last("accepted"))
        await player.read_until(lambda p: p.frames[-1][1] >= accepted["sequence"] and len(p.frames) > 8)
        assert player.frames[-1][2] != still
        await player.send("key_up", key="KeyW")
        before = brightness(player.frames[-1][2])
        await player.send("prompt", text="make it night")
        await player.read_until(lambda p: any(m["type"] == "narration" and "Night" in m["text"] for m in p.messages))
        await player.read_until(lambda p: brightness(p.frames[-1][2]) < before - 10)
        choices = await player.read_until(lambda p: p.offered())  # written live, so they may come later
        assert choices["beat"] == "arrival"
        await player.send("choice", index=await asyncio.to_thread(choice_leading_to, session, "arrival", "ask-eve"))
        moved = await player.read_until(lambda p: (c := p.offered()) and c["beat"] != "arrival" and c)
        assert moved["beat"] == "ask-eve"
        numbers = [number for number, _, _ in player.frames]
        assert numbers == sorted(set(numbers))

    asyncio.run(play(live_platform, session, cookie_for(session.owner), script))
    assert SessionEvent.objects.filter(session=session, player=session.owner).count() == 4
    # Each beat's choices were written once and logged, so a replay offers the same ones.
    offers = SessionEvent.objects.filter(session=session, kind="offer").order_by("sequence")
    assert [offer.payload["beat"] for offer in offers] == ["arrival", "ask-eve"]


def test_the_demo_story_plays_on_our_world_model(live_platform: LivePlatform) -> None:
    document = json.loads((ROOT / "worlds" / "demo_content" / "dark-lighthouse.json").read_text())
    assert document["world"]["engine"] == "worldmodel"
    session = PlaySessionFactory(version=WorldVersionFactory(document=document), engine="worldmodel")

    async def script(player: Player) -> None:
        await player.read_until(lambda p: len(p.frames) >= 3)
        still = player.frames[-1][2]
        await player.send("key_down", key="ArrowLeft")
        accepted = await player.read_until(lambda p: p.last("accepted"))
        await player.read_until(lambda p: p.frames[-1][1] >= accepted["sequence"] and len(p.frames) > 8)
        assert player.frames[-1][2] != still
        assert Image.open(io.BytesIO(player.frames[-1][2])).size == (64, 64)  # the model's own, not the raycaster's

    asyncio.run(play(live_platform, session, cookie_for(session.owner), script))


def worker_process(platform: LivePlatform, name: str, log: Path) -> subprocess.Popen[str]:
    """A worker of its own process, its output in the file `log`: a pipe nobody reads fills at 64 KiB and then
    stops every thread of the worker that logs, frames included."""
    _, token = worker_issue_token(name=name)
    with open(log, "w") as log_file:
        return subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "inference_worker",
                "--url",
                f"{platform.ws_url}/ws/workers/",
                "--token",
                token,
                "--slots",
                "4",
            ],
            cwd=ROOT,
            env=platform_environment(),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            text=True,
        )


@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_hands_its_session_to_another_within_five_seconds_losing_nothing(tmp_path: Path) -> None:
    platform = start_platform("--no-in-process-worker")
    workers = {name: worker_process(platform, name, tmp_path / f"{name}.log") for name in ("left", "right")}
    try:
        wait_until(lambda: platform.health()["inference_workers"]["connected"] == 2, timeout_seconds=30)
        version = WorldVersionFactory()
        session = PlaySessionFactory(version=version)

        async def script(player: Player) -> float:
            await player.read_until(lambda p: len(p.frames) >= 2)
            for key in ("KeyW", "ArrowLeft"):
                await player.send("key_down", key=key)
                await player.read_until(lambda p: len(p.frames) >= p.sequence * 6 + 4)
            await player.send("prompt", text="it starts snowing")
            await player.read_until_database(SessionSnapshot.objects.filter(session=session, sequence=3).exists)
            await player.send("key_up", key="ArrowLeft")
            await player.read_until(lambda p: p.frames[-1][1] >= 4)
            assigned = await asyncio.to_thread(lambda: PlaySession.objects.get(pk=session.pk).worker.name)
            os.kill(workers[assigned].pid, signal.SIGKILL)
            killed_at, last_before = time.monotonic(), player.frames[-1][0]
            await player.send("key_up", key="KeyW")  # sent during the outage: must still arrive once
            await player.read_until(lambda p: p.frames[-1][0] > last_before + 5, seconds=15)
            recovered = time.monotonic() - killed_at
            await player.read_until(lambda p: p.frames[-1][1] >= 5)
            numbers = [number for number, _, _ in player.frames]
            assert numbers == sorted(set(numbers))
            await player.read_until_database(
                SessionSnapshot.objects.filter(session=session, tick__gt=last_before + 5).exists, seconds=15
            )
            return recovered

        recovered = asyncio.run(play(platform, session, cookie_for(session.owner), script))
        assert recovered < 5
        session.refresh_from_db()
        assert session.status == "running"
        events = list(SessionEvent.objects.filter(session=session).order_by("sequence"))
        assert [event.sequence for event in events] == [1, 2, 3, 4, 5]
        assert all(event.applied_tick is not None for event in events)
        newest = SessionSnapshot.objects.filter(session=session).order_by("-tick").first()
        assert_replay_reaches_snapshot(version.document["world"]["engine_parameters"], events, newest)
    finally:
        for process in workers.values():
            process.kill()
            process.wait()
        platform.stop()


def assert_replay_reaches_snapshot(spec: dict, events: list[SessionEvent], snapshot: SessionSnapshot) -> None:
    """An uninterrupted run fed the same logged inputs reaches the state the failed-over session snapshotted."""
    host = SessionHost({"raycaster": RaycastEngine(width=16, height=16)})
    replay = [
        ReplayedInput(
            sequence=event.sequence,
            tick=event.applied_tick,
            input=event.payload,
            events=event.applied_effects.get("events", []),
        )
        for event in events
        if event.sequence <= snapshot.sequence
    ]
    host.open(SessionOpen(session="replay", engine="raycaster", spec=spec, replay=replay, target_tick=snapshot.tick))
    hosted = host.sessions["replay"]
    assert hosted.tick == snapshot.tick
    assert from_snapshot(hosted.engine.snapshot(hosted.id)) == from_snapshot(bytes(snapshot.engine_state))


def test_a_live_world_streams_to_three_participants_and_ten_spectators(live_platform: LivePlatform) -> None:
    document = json.loads((ROOT / "worlds" / "demo_content" / "night-market.json").read_text())
    version = WorldVersionFactory(document=document)
    participants = [UserFactory() for _ in range(3)]
    spectators = [UserFactory() for _ in range(10)]
    session = PlaySessionFactory(version=version, owner=participants[0], is_live=True)
    session.participants.add(*participants[1:])
    cookies = [cookie_for(user) for user in participants + spectators]

    async def everyone() -> list[Player]:
        async with contextlib.AsyncExitStack() as stack:
            players = []
            for cookie in cookies:
                socket = await stack.enter_async_context(
                    websockets.connect(
                        f"{live_platform.ws_url}/ws/play/{session.pk}/",
                        additional_headers={"Cookie": cookie, "Origin": live_platform.url},
                    )
                )
                players.append(Player(socket))
            # Thirteen sockets on a loaded two-core machine: this checks who sees what, not how soon (the load
            # benchmark measures that), so the waits are long.
            await asyncio.gather(*(player.read_until(lambda p: len(p.frames) >= 3, seconds=60) for player in players))
            # Each waits for its input to be logged: two sockets give no order between them otherwise.
            await players[1].send("key_down", key="KeyW")
            await players[1].read_until(lambda p: p.last("accepted"))
            await players[2].send("prompt", text="it starts snowing")
            await players[2].read_until(lambda p: p.last("accepted"))
            await players[5].send("key_down", key="KeyW")
            await asyncio.gather(*(player.read_until(lambda p: len(p.frames) >= 10, seconds=60) for player in players))
            await players[5].read_until(lambda p: p.last("error"))
            return players

    players = asyncio.run(everyone())
    assert [player.last("welcome")["role"] for player in players] == ["player"] * 3 + ["spectator"] * 10
    assert "only players" in players[5].last("error")["error"]
    logged = list(SessionEvent.objects.filter(session=session).order_by("sequence"))
    assert [event.payload.get("participant") for event in logged] == [
        participants[1].username,
        participants[2].username,
    ]
    wait_until(lambda: SessionEvent.objects.filter(session=session, applied_tick__isnull=False).count() == 2)
    joined = SessionEvent.objects.get(session=session, sequence=1).applied_effects["events"]
    assert joined[0] == {"kind": "join", "name": participants[1].username}


def test_a_player_who_leaves_and_returns_finds_the_same_world_and_story(live_platform: LivePlatform) -> None:
    version = WorldVersionFactory(document=DEMO_STORY)
    session = PlaySessionFactory(version=version)
    cookie = cookie_for(session.owner)

    async def first_visit(player: Player) -> tuple[int, float]:
        await player.read_until(lambda p: len(p.frames) >= 2 and p.offered())
        await player.send("prompt", text="make it night")
        await player.send("choice", index=await asyncio.to_thread(choice_leading_to, session, "arrival", "ask-eve"))
        await player.read_until(lambda p: (c := p.offered()) and c["beat"] == "ask-eve")
        # Sequences: 1 the arrival's choices offered, 2 the prompt, 3 the choice.
        await player.read_until_database(SessionSnapshot.objects.filter(session=session, sequence__gte=3).exists)
        await player.read_until(lambda p: p.frames[-1][1] >= 3)
        return player.frames[-1][0], brightness(player.frames[-1][2])

    async def second_visit(player: Player) -> Player:
        await player.read_until(lambda p: len(p.frames) >= 3 and p.offered())
        return player

    last_frame, night = asyncio.run(play(live_platform, session, cookie, first_visit))
    time.sleep(1)
    player = asyncio.run(play(live_platform, session, cookie, second_visit))
    assert player.offered()["beat"] == "ask-eve"
    assert player.frames[0][0] > last_frame
    assert abs(brightness(player.frames[-1][2]) - night) < 15


@pytest.mark.django_db(transaction=True)
def test_when_every_slot_is_taken_a_player_waits_in_the_queue_until_one_frees() -> None:
    platform = start_platform(
        "--in-process-worker", "--worker-slots", "1", environment=platform_environment(PLAY_PARK_AFTER_SECONDS="1")
    )
    try:
        wait_until(lambda: platform.health()["inference_workers"]["connected"] == 1)
        first, second = PlaySessionFactory(), PlaySessionFactory()
        cookies = cookie_for(first.owner), cookie_for(second.owner)

        async def both() -> Player:
            async with websockets.connect(
                f"{platform.ws_url}/ws/play/{first.pk}/",
                additional_headers={"Cookie": cookies[0], "Origin": platform.url},
            ) as one:
                await Player(one).read_until(lambda p: len(p.frames) >= 2)
                async with websockets.connect(
                    f"{platform.ws_url}/ws/play/{second.pk}/",
                    additional_headers={"Cookie": cookies[1], "Origin": platform.url},
                ) as two:
                    waiting = Player(two)
                    status = await waiting.read_until(
                        lambda p: (s := p.last("status")) and s["state"] == "queued" and s
                    )
                    assert status["queue_place"] == 1
                    assert status["estimated_wait_s"] >= 0
                    await one.close()  # the first player leaves; their session is parked and frees the slot
                    await waiting.read_until(lambda p: len(p.frames) >= 2, seconds=20)
                    return waiting

        waiting = asyncio.run(both())
        assert waiting.last("status")["state"] == "running"
        assert PlaySession.objects.get(pk=first.pk).status == "parked"
    finally:
        platform.stop()


def test_over_a_real_socket_a_stranger_is_refused_and_bad_messages_leave_the_session_up(
    live_platform: LivePlatform,
) -> None:
    session = PlaySessionFactory()
    owner_cookie, stranger_cookie = cookie_for(session.owner), cookie_for(UserFactory())
    url = f"{live_platform.ws_url}/ws/play/{session.pk}/"

    async def stranger() -> int:
        try:
            async with websockets.connect(
                url, additional_headers={"Cookie": stranger_cookie, "Origin": live_platform.url}
            ):
                return 101
        except websockets.InvalidStatus as refused:
            return refused.response.status_code

    async def owner(player: Player) -> list[str]:
        await player.read_until(lambda p: len(p.frames) >= 1)
        for bad in ("{nope", json.dumps({"type": "warp", "seq": 1}), "x" * 10_000, json.dumps([1, 2])):
            await player.connection.send(bad)
        errors = await player.read_until(
            lambda p: (e := [m for m in p.messages if m["type"] == "error"]) and len(e) == 4 and e
        )
        await player.send("key_down", key="KeyD")
        await player.read_until(lambda p: p.last("accepted"))
        return [error["error"] for error in errors]

    assert asyncio.run(stranger()) == 403
    errors = asyncio.run(play(live_platform, session, owner_cookie, owner))
    assert "not valid JSON" in errors[0]
    assert "unknown message type" in errors[1]
    assert "at most 4096" in errors[2]
