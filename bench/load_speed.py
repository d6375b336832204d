"""The platform under load (issue 8): many WebSocket players at once, and one session played for a long time.

It runs the platform as production does, on this one machine: daphne (PostgreSQL, the Redis channel layer,
frames on Redis pub/sub) and an inference worker in a process of its own on the raycaster engine, on a
throwaway database, played by WebSocket clients speaking the browser's protocol (play/PROTOCOL.md), on
loopback only, every loop bounded in time. (A worker inside daphne's process would draw under daphne's GIL,
and each of daphne's socket writes would wait on the drawing thread.)

- ws200: 200 players for 60 s, as 4 Live worlds of 50 participants (drawing costs a world, one shared
  picture, while every player has a socket, sends keys and gets every frame). Each player presses or releases
  a key about once a second. Input-to-frame is the time from sending a key to the first frame whose header
  names that input as applied; a dropped connection is one that closed before the end.
- soak: one session played for 30 minutes (a key every half second), the resident memory of the daphne and
  the worker process compared between the end and the end of a two-minute warm-up (the larger growth is
  `soak_rss_growth_pct`); then, once every socket has closed, the group memberships the benchmark's sessions
  still hold on either channel layer (each disconnect must leave its groups).
- The gallery under 50 concurrent HTTP clients with 10,000 worlds is `gallery_bench`.

--quick (CI): 20 players (one world) for 15 s, a 40-second soak (20 s warm-up).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

from bench import Skipped
from bench.gallery_speed import django_ready, percentile
from bench.runtime_speed import fixtures

# 200 players as 4 Live worlds of 50: drawing costs a world (one shared picture), sockets cost a player.
WORLDS, PLAYERS_PER_WORLD = 4, 50


@dataclass
class Player:
    """One client: its socket, the latencies of its inputs and whether the platform dropped it."""

    socket: Any
    latencies: list[float] = field(default_factory=list)
    dropped: bool = False


def run(quick: bool) -> dict[str, float]:
    django_ready()
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise Skipped("it measures the production stack: set DATABASE_URL=postgres://... and REDIS_URL (.ci/run does)")
    from tests.fixtures import platform_environment, start_platform

    worlds, players_per_world, seconds = (1, 20, 15) if quick else (WORLDS, PLAYERS_PER_WORLD, 60)
    soak_seconds, warm_up_seconds = (40, 20) if quick else (1800, 120)
    original_name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"]["NAME"] = f"{original_name}_load_bench"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    platform = worker = None
    try:
        environment = platform_environment(LOG_LEVEL="WARNING", CELERY_BROKER_URL="", WORLDLOOM_LANGUAGE_MODEL="none")
        platform = start_platform("--no-in-process-worker", environment=environment)
        # One session a world runs on the worker; the slots leave room for the soak's session.
        worker = worker_started(platform, worlds + 2, environment)
        live = [fixtures(1, live=True, spectators=players_per_world - 1, participate=True) for _ in range(worlds)]
        soak_ids, soak_cookies = fixtures(1)
        address = platform.url.removeprefix("http://")
        # The soak first, on a fresh platform: its memory growth is the session's own, not the crowd's backlog.
        growth = asyncio.run(
            soak(
                address,
                soak_ids[0],
                soak_cookies[0],
                {"daphne": platform.process.pid, "worker": worker.pid},
                soak_seconds,
                warm_up_seconds,
            )
        )
        players = asyncio.run(crowd(address, live, seconds))
        latencies = sorted(latency for player in players for latency in player.latencies)
        groups_left = group_memberships_after_disconnect([ids[0] for ids, _ in live] + soak_ids)
    except Exception:
        if platform is not None:
            print(platform.output()[-20000:], file=sys.stderr)
        raise
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=10)
        if platform is not None:
            platform.stop()
        connection.creation.destroy_test_db(original_name, verbosity=0)
    if not latencies:
        raise RuntimeError("no input reached a frame")
    return {
        "ws200_players": float(worlds * players_per_world),
        "ws200_worlds": float(worlds),
        "ws200_input_to_frame_p50_ms": statistics.median(latencies),
        "ws200_input_to_frame_p95_ms": percentile(latencies, 0.95),
        "ws200_dropped_connections": float(sum(player.dropped for player in players)),
        "soak_seconds": float(soak_seconds),
        "soak_rss_growth_pct": max(growth.values()),
        "soak_daphne_rss_growth_pct": growth["daphne"],
        "soak_worker_rss_growth_pct": growth["worker"],
        "soak_groups_left": float(groups_left),
    }


def worker_started(platform: Any, slots: int, environment: dict[str, str]) -> subprocess.Popen[bytes]:
    """An inference worker in a process of its own, as production runs them, once the platform counts its slots."""
    from tests.fixtures import ROOT, wait_until
    from workers.services import worker_issue_token

    _, token = worker_issue_token(name=f"load-bench-{time.monotonic_ns()}")
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inference.worker",
            "--url",
            f"{platform.ws_url}/ws/workers/",
            "--token",
            token,
            "--slots",
            str(slots),
        ],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: platform.health()["inference_workers"]["slots"] == slots, timeout_seconds=120)
    return worker


async def crowd(address: str, live: list[tuple[list[str], list[str]]], seconds: float) -> list[Player]:
    """Every player of every Live world connected at once, pressing keys for `seconds`."""
    from bench.runtime_speed import connect

    players = []
    for session_ids, cookies in live:
        # A Live world has one session; its owner and the participants all join it.
        for cookie in cookies:
            players.append(Player(await connect(address, session_ids[0], cookie)))
    await asyncio.gather(*(play(player, seconds, interval=1.0) for player in players))
    for player in players:
        await player.socket.close()
    return players


async def play(player: Player, seconds: float, interval: float) -> None:
    """Read and acknowledge frames; every `interval` (jittered) toggle a key and time it to its frame."""
    rng = random.Random(id(player))  # noqa: S311 (jitter, not a secret)
    deadline = time.monotonic() + seconds
    next_input = time.monotonic() + rng.uniform(0, interval)
    sequence = 0
    sent: dict[int, float] = {}  # client seq -> when it was sent
    awaiting: dict[int, float] = {}  # session sequence -> when its input was sent
    while (now := time.monotonic()) < deadline:
        if now >= next_input:
            sequence += 1
            kind = "key_down" if sequence % 2 else "key_up"
            sent[sequence] = time.perf_counter()
            if not await sent_or_dropped(player, {"type": kind, "key": "KeyW", "seq": sequence}):
                return
            next_input = now + interval * rng.uniform(0.7, 1.3)
        try:
            async with asyncio.timeout(min(next_input, deadline) - time.monotonic()):
                message = await player.socket.recv()
        except TimeoutError:
            continue
        except websockets.ConnectionClosed:
            player.dropped = True
            return
        if isinstance(message, bytes):
            arrived = time.perf_counter()
            applied = int.from_bytes(message[4:8])
            if not await sent_or_dropped(player, {"type": "ack", "frame": int.from_bytes(message[:4])}):
                return
            for session_sequence in [number for number in awaiting if number <= applied]:
                player.latencies.append((arrived - awaiting.pop(session_sequence)) * 1000)
            continue
        reply = json.loads(message)
        if reply["type"] == "accepted" and reply["seq"] in sent:
            awaiting[reply["sequence"]] = sent.pop(reply["seq"])


async def sent_or_dropped(player: Player, message: dict[str, Any]) -> bool:
    """Send `message`; False (and the player counted as dropped) when the platform has closed the connection."""
    try:
        await player.socket.send(json.dumps(message))
    except websockets.ConnectionClosed:
        player.dropped = True
        return False
    return True


async def soak(
    address: str, session: str, cookie: str, processes: dict[str, int], seconds: float, warm_up: float
) -> dict[str, float]:
    """Play one session for `seconds`; how much each process's resident memory grew after the warm-up (%)."""
    from bench.runtime_speed import connect

    player = Player(await connect(address, session, cookie))
    await play(player, warm_up, interval=0.5)
    before = {name: resident_kilobytes(pid) for name, pid in processes.items()}
    await play(player, seconds - warm_up, interval=0.5)
    after = {name: resident_kilobytes(pid) for name, pid in processes.items()}
    await player.socket.close()
    if player.dropped:
        raise RuntimeError("the soak's connection was dropped")
    return {name: (after[name] - before[name]) / before[name] * 100 for name in processes}


def resident_kilobytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def group_memberships_after_disconnect(session_ids: list[str], seconds: float = 10) -> int:
    """Members still in these sessions' channel-layer groups once every socket has closed, waited for up to
    `seconds` (disconnects are handled after the sockets close): the default layer's sorted sets (channels-redis
    keeps one a group), and the frames layer's pub/sub subscriptions (one a daphne process that has a member)."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(os.environ.get("REDIS_URL", settings.REDIS_URL))

    def members() -> int:
        groups = sum(int(client.zcard(f"asgi:group:play.{session}")) for session in session_ids)
        subscribed = client.pubsub_numsub(*(f"asgi__group__play.{session}" for session in session_ids))
        return groups + sum(int(count) for _, count in subscribed)

    deadline = time.monotonic() + seconds
    while (left := members()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
