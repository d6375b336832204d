"""The full play stack on this machine: input-to-frame latency, frames per session, Live fan-out lag.

It runs the platform as `make run` does (daphne with an in-process worker on the raycaster engine) on a
throwaway embedded database, and plays it with WebSocket clients speaking the browser's protocol. The Django
side of it (migrations, fixtures) runs in a child process with the services' variables removed, whatever the
runner's environment says: the embedded mode must not reach a configured PostgreSQL or Redis, and the runner's
own process stays free for the benchmarks that measure them (`gallery_bench`, `load_bench`).

- input-to-frame: from sending a key to the first frame whose header names that input as applied;
- engine step: one raycaster step of one session at the served size, in this process;
- overhead: their difference at p50, what the platform adds (sockets, log, channel layer, tick wake-up);
- fps per session with 1, 4 and 8 sessions on one worker;
- fan-out: with 50 spectators of a Live world, how much later than the player each one gets a frame (p95).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


# The variables that switch the platform from the embedded mode to the production services.
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")


def run(quick: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="worldloom-bench-") as data_dir:
        result = subprocess.run(
            [sys.executable, "-m", "bench.runtime_speed", *(["--quick"] if quick else [])],
            cwd=ROOT,
            env=embedded_environment(data_dir),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    if result.returncode != 0:
        raise RuntimeError(f"the embedded measurement failed:\n{result.stderr[-5000:]}")
    return json.loads(result.stdout.splitlines()[-1])


def measure(quick: bool) -> dict[str, float]:
    """The measurement itself, in the child process whose environment `embedded_environment` made."""
    environment = dict(os.environ)
    sys.path.append(str(ROOT / "platform"))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    figures = {"engine_step_p50_ms": engine_step_p50_ms(quick)}
    with serving(environment) as url:
        figures |= asyncio.run(measure_stack(url, quick))
    figures["overhead_p50_ms"] = figures["input_to_frame_p50_ms"] - figures["engine_step_p50_ms"]
    order = [
        "input_to_frame_p50_ms",
        "input_to_frame_p95_ms",
        "engine_step_p50_ms",
        "overhead_p50_ms",
        "fps_sessions_1",
        "fps_sessions_4",
        "fps_sessions_8",
        "fanout50_extra_lag_p95_ms",
    ]
    return {key: round(figures[key], 2) for key in order}


def embedded_environment(data_dir: str) -> dict[str, str]:
    variables = {key: value for key, value in os.environ.items() if key not in SERVICE_VARIABLES}
    return variables | {"WORLDLOOM_DATA_DIR": data_dir, "DJANGO_SETTINGS_MODULE": "config.settings", "HTTPS": "false"}


def engine_step_p50_ms(quick: bool) -> float:
    from inference.engine import StepRequest, create_engine

    engine = create_engine("raycaster")
    session = engine.open_session({"seed": 3, "size": 16})
    timings = []
    for tick in range(40 if quick else 200):
        started = time.perf_counter()
        engine.step([StepRequest(session, 1 if tick % 10 < 5 else 16, [])])
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


class serving:
    """`manage.py serve` with its in-process worker on a free port, for as long as the `with` lasts."""

    def __init__(self, environment: dict[str, str]) -> None:
        self.environment = environment

    def __enter__(self) -> str:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--worker-slots", "16"],
            cwd=ROOT,
            env=self.environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    time.sleep(2)  # let the in-process worker connect
                    return url
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("the platform did not start within 60 s")

    def __exit__(self, *_: Any) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def fixtures(
    sessions: int, live: bool = False, spectators: int = 0, participate: bool = False, engine: str = "raycaster"
) -> tuple[list[str], list[str]]:
    """Session ids and the cookies of their players (and of the Live world's spectators, who with `participate`
    join its first session as participants instead)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils import timezone

    from accounts.services import user_create
    from play.models import PlaySession
    from worlds.documents import world_document
    from worlds.models import World, WorldVersion

    def cookie(user: Any) -> str:
        store = SessionStore()
        store[SESSION_KEY], store[BACKEND_SESSION_KEY] = str(user.pk), "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.save()
        return f"sessionid={store.session_key}"

    stamp = f"{time.monotonic_ns()}"
    owner = user_create(username=f"bench-{stamp}", email="", password=stamp)
    world = World.objects.create(
        owner=owner,
        title="Bench",
        slug=f"bench-{stamp}",
        logline="bench",
        category="live" if live else "games",
        engine_parameters={"seed": 5},
    )
    version = WorldVersion.objects.create(
        world=world, number=1, document=world_document(world), published_by=owner, status="approved"
    )
    players = [
        owner,
        *(user_create(username=f"bench-{stamp}-{n}", email="", password=stamp) for n in range(sessions - 1)),
    ]
    ids = [
        str(
            PlaySession.objects.create(
                version=version, owner=player, engine=engine, is_live=live, queued_at=timezone.now()
            ).pk
        )
        for player in players
    ]
    watchers = [user_create(username=f"bench-{stamp}-s{n}", email="", password=stamp) for n in range(spectators)]
    if participate:
        PlaySession.objects.get(pk=ids[0]).participants.add(*watchers)
    return ids, [cookie(person) for person in players + watchers]


async def connect(url: str, session: str, cookie: str) -> Any:
    import websockets

    return await websockets.connect(
        f"ws://{url}/ws/play/{session}/",
        additional_headers={"Cookie": cookie, "Origin": f"http://{url}"},
        max_size=2**22,
        # A platform just out of a load test may still be draining it: wait for the handshake a while.
        open_timeout=30,
    )


async def frames(socket: Any, seconds: float, on_frame: Any = None) -> int:
    """Read for `seconds`, acknowledging frames; how many frames came."""
    count = 0
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            async with asyncio.timeout(left):
                message = await socket.recv()
        except TimeoutError:
            break
        if isinstance(message, bytes):
            count += 1
            number = int.from_bytes(message[:4])
            if on_frame:
                on_frame(number, int.from_bytes(message[4:8]))
            await socket.send(json.dumps({"type": "ack", "frame": number}))
    return count


async def measure_stack(url: str, quick: bool) -> dict[str, float]:
    from asgiref.sync import sync_to_async

    figures: dict[str, float] = {}
    ids, cookies = await sync_to_async(fixtures)(1)
    socket = await connect(url, ids[0], cookies[0])
    await frames(socket, 2)
    latencies = []
    for attempt in range(15 if quick else 60):
        sent = time.perf_counter()
        await socket.send(
            json.dumps({"type": "key_down" if attempt % 2 == 0 else "key_up", "key": "KeyW", "seq": attempt + 1})
        )
        sequence = None
        while True:
            message = await socket.recv()
            if isinstance(message, bytes):
                await socket.send(json.dumps({"type": "ack", "frame": int.from_bytes(message[:4])}))
                if sequence is not None and int.from_bytes(message[4:8]) >= sequence:
                    latencies.append((time.perf_counter() - sent) * 1000)
                    break
            elif (reply := json.loads(message))["type"] == "accepted":
                sequence = reply["sequence"]
        await asyncio.sleep(0.1)
    await socket.close()
    latencies.sort()
    figures["input_to_frame_p50_ms"] = statistics.median(latencies)
    figures["input_to_frame_p95_ms"] = latencies[int(0.95 * (len(latencies) - 1))]

    seconds = 3 if quick else 8
    for count in (1, 4, 8):
        ids, cookies = await sync_to_async(fixtures)(count)
        sockets = [await connect(url, session, cookie) for session, cookie in zip(ids, cookies, strict=True)]
        await asyncio.gather(*(frames(s, 2) for s in sockets))
        received = await asyncio.gather(*(frames(s, seconds) for s in sockets))
        figures[f"fps_sessions_{count}"] = statistics.mean(received) / seconds
        for s in sockets:
            await s.close()

    ids, cookies = await sync_to_async(fixtures)(1, live=True, spectators=50)
    arrivals: dict[int, list[float]] = {}
    sockets = [await connect(url, ids[0], cookie) for cookie in cookies]
    await asyncio.gather(*(frames(s, 2) for s in sockets))

    def note(number: int, _: int) -> None:
        arrivals.setdefault(number, []).append(time.perf_counter())

    await asyncio.gather(*(frames(s, seconds, note) for s in sockets))
    lags = sorted((arrival - min(times)) * 1000 for times in arrivals.values() if len(times) > 1 for arrival in times)
    figures["fanout50_extra_lag_p95_ms"] = lags[int(0.95 * (len(lags) - 1))]
    for s in sockets:
        await s.close()
    return figures


if __name__ == "__main__":
    print(json.dumps(measure(quick="--quick" in sys.argv[1:])))
