"""The platform under load (issue 8): many WebSocket players at once, and one session played for a long time.

It runs the platform as production does on this machine (daphne with an in-process worker on the raycaster
engine, PostgreSQL, the Redis channel layer) on a throwaway database, and plays it with WebSocket clients
speaking the browser's protocol (stories/PROTOCOL.md), on loopback only, every loop bounded in time.

- ws200: 200 players for 60 s, as 10 Live worlds of 20 participants each (one shared picture per world: ten
  worlds at 20 frames a second is what one CPU worker renders, while every player has a socket, sends keys
  and gets every frame). Each player presses or releases a key about once a second. Input-to-frame is the
  time from sending a key to the first frame whose header names that input as applied; a dropped
  connection is one that closed before the end.
- soak: one session played for 30 minutes (a key every half second), the serving process's resident memory
  (daphne and its in-process worker) compared between the end and the end of a two-minute warm-up; then,
  after every socket has closed, the channel-layer group memberships the benchmark's sessions and players
  still hold (each disconnect must leave its groups).
- The gallery under 50 concurrent HTTP clients with 10,000 worlds is `gallery_bench`.

--quick (CI): 20 players (one world) for 15 s, a 40-second soak (20 s warm-up).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import Skipped
from bench.gallery_speed import django_ready, percentile
from bench.runtime_speed import fixtures

PLAYERS_PER_WORLD = 20


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

    worlds, seconds = (1, 15) if quick else (10, 60)
    soak_seconds, warm_up_seconds = (40, 20) if quick else (1800, 120)
    original_name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"]["NAME"] = f"{original_name}_load_bench"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    platform = None
    try:
        # One session a world runs on the worker; the slots leave room for the soak's session.
        environment = platform_environment(LOG_LEVEL="WARNING", DATABASE_CONN_MAX_AGE="0", CELERY_BROKER_URL="",
                                           WORLDLOOM_LANGUAGE_MODEL="none")  # fmt: skip
        platform = start_platform("--in-process-worker", "--worker-slots", str(worlds + 2), environment=environment)
        live = [fixtures(1, live=True, spectators=PLAYERS_PER_WORLD - 1, participate=True) for _ in range(worlds)]
        soak_ids, soak_cookies = fixtures(1)
        address = platform.url.removeprefix("http://")
        # The soak first, on a fresh platform: its memory growth is the session's own, not the crowd's backlog.
        rss_before, rss_after = asyncio.run(soak(address, soak_ids[0], soak_cookies[0], platform.process.pid,
                                                 soak_seconds, warm_up_seconds))  # fmt: skip
        players = asyncio.run(crowd(address, live, seconds))
        latencies = sorted(latency for player in players for latency in player.latencies)
        time.sleep(2)  # disconnects are handled after the sockets close
        groups_left = group_memberships([ids[0] for ids, _ in live] + soak_ids)
    except Exception:
        if platform is not None:
            print(platform.output()[-20000:], file=sys.stderr)
        raise
    finally:
        if platform is not None:
            platform.stop()
        connection.creation.destroy_test_db(original_name, verbosity=0)
    if not latencies:
        raise RuntimeError("no input reached a frame")
    return {
        "ws200_players": float(worlds * PLAYERS_PER_WORLD),
        "ws200_input_to_frame_p50_ms": statistics.median(latencies),
        "ws200_input_to_frame_p95_ms": percentile(latencies, 0.95),
        "ws200_dropped_connections": float(sum(player.dropped for player in players)),
        "soak_seconds": float(soak_seconds),
        "soak_rss_growth_pct": (rss_after - rss_before) / rss_before * 100,
        "soak_groups_left": float(groups_left),
    }


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
            await player.socket.send(json.dumps({"type": kind, "key": "KeyW", "seq": sequence}))
            next_input = now + interval * rng.uniform(0.7, 1.3)
        try:
            async with asyncio.timeout(min(next_input, deadline) - time.monotonic()):
                message = await player.socket.recv()
        except TimeoutError:
            continue
        except Exception:
            player.dropped = True
            return
        if isinstance(message, bytes):
            applied = int.from_bytes(message[4:8])
            await player.socket.send(json.dumps({"type": "ack", "frame": int.from_bytes(message[:4])}))
            arrived = time.perf_counter()
            for session_sequence in [number for number in awaiting if number <= applied]:
                player.latencies.append((arrived - awaiting.pop(session_sequence)) * 1000)
            continue
        reply = json.loads(message)
        if reply["type"] == "accepted" and reply["seq"] in sent:
            awaiting[reply["sequence"]] = sent.pop(reply["seq"])


async def soak(address: str, session: str, cookie: str, pid: int, seconds: float, warm_up: float) -> tuple[int, int]:
    """Play one session for `seconds`; the serving process's RSS after the warm-up and at the end (kB)."""
    from bench.runtime_speed import connect

    player = Player(await connect(address, session, cookie))
    await play(player, warm_up, interval=0.5)
    before = resident_kilobytes(pid)
    await play(player, seconds - warm_up, interval=0.5)
    after = resident_kilobytes(pid)
    await player.socket.close()
    if player.dropped:
        raise RuntimeError("the soak's connection was dropped")
    return before, after


def resident_kilobytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def group_memberships(session_ids: list[str]) -> int:
    """Members still in the channel-layer groups of these sessions (channels-redis keeps a sorted set each)."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(os.environ.get("REDIS_URL", settings.REDIS_URL))
    return sum(int(client.zcard(f"asgi:group:play.{session}")) for session in session_ids)
