"""The platform under load (issues 8 and 19): many WebSocket players at once, what each process spends on
them, and one session played for a long time.

It runs the platform as production does, on this one machine: D daphne processes (PostgreSQL, the Redis channel
layer, frames on Redis pub/sub) and K inference workers in processes of their own on the raycaster engine (or
`--engine worldmodel`), on a throwaway database, played by WebSocket clients speaking the browser's protocol
(play/PROTOCOL.md), on loopback only, every loop bounded in time. Players and workers are spread over the
daphnes in turn, as `run_cluster`'s HAProxy does (round robin), without the balancer: its CPU stays out of
daphne's figures and the benchmark needs no HAProxy. (A worker inside daphne's process would draw under daphne's
GIL, and each of daphne's socket writes would wait on the drawing thread.)

- The shape (`--players`, `--worlds`, `--daphnes`, `--workers`): the players spread over that many Live worlds
  (drawing costs a world, one shared picture, while every player has a socket, sends keys and gets every frame),
  each pressing or releasing a key about once a second. Input-to-frame is the time from sending a key to the
  first frame whose header names that input as applied; a dropped connection is one that closed before the end.
  The players first only watch, for a third as long: each process's CPU time then (utime + stime from /proc),
  divided by the frames delivered to players, is `daphne_`, `worker_` and, for the load generator in this
  process, `client_cpu_ms_per_frame`; what the inputs add on top of that while they press keys, per input, is
  `daphne_` and `worker_cpu_ms_per_input`. A kind's figures sum its processes. A worker draws a frame once for
  all its world's players: `worker_cpu_ms_per_drawn_frame` divides by the frames drawn.
- players_per_core_p95_150ms: the most players (at the shape's players per world) for which input-to-frame
  p95 stays under 150 ms with no connection dropped, found by doubling and then halving the step from the
  shape's own figure, each step a short round on the same processes, for as long as the time budget lasts;
  divided by this machine's cores (the load generator runs on them too).
- soak: one session played for 30 minutes (a key every half second), the resident memory of each daphne and
  worker compared between the end and the end of a two-minute warm-up (the largest growth is
  `soak_rss_growth_pct`); then, once every socket has closed, the group memberships the benchmark's sessions
  still hold on either channel layer (each disconnect must leave its groups): `soak_groups_left`, counted once
  daphne's own deadline for a consumer to finish has passed; `consumers_killed` counts those daphne cancelled.
  Each daphne writes its log to a file: a pipe read only at the end fills at 64 KiB, and from then on every
  thread that logs waits on it, daphne's event loop too, which then handles no disconnect at all.
- The gallery under 50 concurrent HTTP clients with 10,000 worlds is `gallery_bench`.

`make bench` runs 200 players in 4 worlds on one daphne and one worker; --quick (CI) 20 players in one world for
15 s, a 40-second soak (20 s warm-up) and a 24-second search. `python -m bench.load_speed --help` runs any shape.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websockets

from bench import Skipped
from bench.gallery_speed import django_ready, percentile
from bench.runtime_speed import fixtures
from play.protocol import JPEG_ACK_TICKS

TARGET_P95_MS = 150.0
# The most of each process kind a shape may name: `run_cluster`'s limit.
MOST_PROCESSES = 32
# The most players one round of the search may start: far past what one machine carries at 150 ms.
MOST_PLAYERS = 2000
# The engines a shape may run on: the two every worker has (a CPU torch is enough for the world model).
ENGINES = ("raycaster", "worldmodel")
# Worker slots beyond the busiest round's worlds: the soak's session.
SPARE_SLOTS = 2
# daphne's application_close_timeout (serve keeps its default): how long a consumer may take to finish after its
# socket closed before daphne cancels it, and what daphne logs when it does.
DAPHNE_CLOSE_SECONDS = 10
KILLED = "took too long to shut down and was killed"
# A round's players first only watch, for this share of its time: the CPU per frame is measured there, and what
# the inputs add on top of it while they press keys.
WATCHING = 1 / 3


@dataclass(frozen=True)
class Shape:
    """How many players, in how many Live worlds, on how many daphne and worker processes."""

    players: int
    worlds: int
    daphnes: int = 1
    workers: int = 1
    engine: str = "raycaster"

    @property
    def players_per_world(self) -> int:
        return math.ceil(self.players / self.worlds)


@dataclass(frozen=True)
class Plan:
    """A shape and how long each part of the benchmark plays it."""

    shape: Shape
    seconds: float
    soak_seconds: float
    warm_up_seconds: float
    search_seconds: float  # the search's budget; each of its rounds plays `round_seconds`
    round_seconds: float


QUICK = Plan(
    Shape(players=20, worlds=1), seconds=15, soak_seconds=40, warm_up_seconds=20, search_seconds=24, round_seconds=6
)
FULL = Plan(
    Shape(players=200, worlds=4),
    seconds=60,
    soak_seconds=1800,
    warm_up_seconds=120,
    search_seconds=300,
    round_seconds=30,
)


@dataclass
class Player:
    """One client: its socket, what it sent and got, and whether the platform dropped it."""

    socket: Any
    session: str
    latencies: list[float] = field(default_factory=list)
    frames: set[int] = field(default_factory=set)  # the numbers of the frames it was sent
    inputs: int = 0
    dropped: bool = False
    acknowledged: int = 0  # the newest frame it acknowledged, by the page's rule (every JPEG_ACK_TICKS)


@dataclass(frozen=True)
class Tally:
    """What the players were sent and sent so far, and the CPU each process had spent by then."""

    cpu_seconds: dict[str, float]  # by process name: daphne1, worker1, client
    frames: int  # delivered, to all players
    drawn: int  # frames the workers drew, as far as any player saw them
    inputs: int

    def __sub__(self, earlier: Tally) -> Tally:
        cpu = {name: seconds - earlier.cpu_seconds[name] for name, seconds in self.cpu_seconds.items()}
        return Tally(cpu, self.frames - earlier.frames, self.drawn - earlier.drawn, self.inputs - earlier.inputs)

    def cpu_ms(self, kind: str) -> float:
        return 1000 * sum(seconds for name, seconds in self.cpu_seconds.items() if name.rstrip("0123456789") == kind)


@dataclass
class Round:
    """One crowd, first watching (frames only), then pressing keys: latencies, drops, and what each part cost."""

    players: list[Player]
    watching: Tally
    playing: Tally

    @property
    def latencies(self) -> list[float]:
        return sorted(latency for player in self.players for latency in player.latencies)

    @property
    def p95_ms(self) -> float:
        return percentile(self.latencies, 0.95) if self.latencies else math.inf

    @property
    def dropped(self) -> int:
        return sum(player.dropped for player in self.players)

    @property
    def within_target(self) -> bool:
        return self.dropped == 0 and self.p95_ms < TARGET_P95_MS

    def cpu_ms_per_frame(self, kind: str) -> float:
        """A process kind's CPU per delivered frame while the players only watched."""
        return self.watching.cpu_ms(kind) / self.watching.frames if self.watching.frames else math.nan

    def cpu_ms_per_drawn_frame(self, kind: str) -> float:
        return self.watching.cpu_ms(kind) / self.watching.drawn if self.watching.drawn else math.nan

    def cpu_ms_per_input(self, kind: str) -> float:
        """What the inputs added: the CPU while the players pressed keys less what its frames cost, per input."""
        if not self.playing.inputs:
            return math.nan
        frames_cost = self.cpu_ms_per_frame(kind) * self.playing.frames
        return (self.playing.cpu_ms(kind) - frames_cost) / self.playing.inputs


def tally(players: list[Player], pids: dict[str, int]) -> Tally:
    drawn: dict[str, set[int]] = {}
    for player in players:
        drawn.setdefault(player.session, set()).update(player.frames)
    return Tally(
        cpu_seconds={name: cpu_seconds(pid) for name, pid in pids.items()},
        frames=sum(len(player.frames) for player in players),
        drawn=sum(len(numbers) for numbers in drawn.values()),
        inputs=sum(player.inputs for player in players),
    )


@dataclass
class Stack:
    """The platform's processes: daphnes and workers, each by the name its figures carry, and daphnes' logs."""

    logs: Path
    daphnes: list[Any] = field(default_factory=list)  # tests.fixtures.LivePlatform
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def addresses(self) -> list[str]:
        return [daphne.url.removeprefix("http://") for daphne in self.daphnes]

    def pids(self) -> dict[str, int]:
        named = {f"daphne{index}": daphne.process.pid for index, daphne in enumerate(self.daphnes, start=1)}
        return named | {f"worker{index}": worker.pid for index, worker in enumerate(self.workers, start=1)}

    def output(self) -> str:
        return "".join(daphne.output()[-10000:] for daphne in self.daphnes)

    def consumers_killed(self) -> int:
        """Connections whose consumer daphne cancelled: one still running `DAPHNE_CLOSE_SECONDS` after its socket
        closed (its groups are left unless its disconnect had already run)."""
        return sum(log.read_text(errors="replace").count(KILLED) for log in self.logs.glob("*.log"))

    def stop(self) -> None:
        for worker in self.workers:
            worker.terminate()
            worker.wait(timeout=10)
        for daphne in self.daphnes:
            daphne.stop()


def run(quick: bool) -> dict[str, float]:
    return measure(QUICK if quick else FULL)


def measure(plan: Plan) -> dict[str, float]:
    django_ready()
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        raise Skipped("it measures the production stack: set DATABASE_URL=postgres://... and REDIS_URL (.ci/run does)")
    from tests.fixtures import platform_environment

    shape = plan.shape
    original_name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"]["NAME"] = f"{original_name}_load_bench"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    stack = Stack(logs=Path(tempfile.mkdtemp(prefix="worldloom-load-bench-")))
    sessions: list[str] = []
    try:
        environment = platform_environment(LOG_LEVEL="WARNING", CELERY_BROKER_URL="", WORLDLOOM_LANGUAGE_MODEL="none")
        most_worlds = max(shape.worlds, math.ceil(MOST_PLAYERS / shape.players_per_world))
        slots = math.ceil(most_worlds / shape.workers) + SPARE_SLOTS
        stack_started(stack, shape, slots, environment)
        soak_ids, soak_cookies = fixtures(1)
        sessions += soak_ids
        # The soak first, on fresh processes: its memory growth is the session's own, not the crowd's backlog.
        growth = asyncio.run(
            soak(
                stack.addresses[0], soak_ids[0], soak_cookies[0], stack.pids(), plan.soak_seconds, plan.warm_up_seconds
            )
        )

        sessions_ended(stack, soak_ids)

        def attempt(players: int, seconds: float) -> Round:
            worlds = math.ceil(players / shape.players_per_world)
            played = crowd_round(stack, players, worlds, seconds, shape.engine)
            print(
                f"load_bench round: {players} players in {worlds} worlds, p95 {played.p95_ms:.0f} ms, "
                f"{played.dropped} dropped",
                file=sys.stderr,
            )
            round_sessions = sorted({player.session for player in played.players})
            sessions.extend(round_sessions)
            # The next round starts once this one's sockets are gone (its players would be counted in it) and its
            # worlds no longer drawn: a world nobody watches is drawn until the park time, which would load the
            # next round with the last one's worlds.
            group_memberships_after_disconnect(sessions)
            sessions_ended(stack, round_sessions)
            return played

        measured = attempt(shape.players, plan.seconds)
        best = players_within_target(
            measured, lambda players: attempt(players, plan.round_seconds), plan.search_seconds
        )
        groups_left = group_memberships_after_disconnect(sessions)
        killed = stack.consumers_killed()
    except Exception:
        print(stack.output(), file=sys.stderr)
        raise
    finally:
        stack.stop()
        shutil.rmtree(stack.logs, ignore_errors=True)
        connection.creation.destroy_test_db(original_name, verbosity=0)
    if not measured.latencies:
        raise RuntimeError("no input reached a frame")
    return {
        "ws_players": float(shape.players),
        "ws_worlds": float(shape.worlds),
        "ws_daphnes": float(shape.daphnes),
        "ws_workers": float(shape.workers),
        "ws_input_to_frame_p50_ms": statistics.median(measured.latencies),
        "ws_input_to_frame_p95_ms": measured.p95_ms,
        "dropped_connections": float(measured.dropped),
        "frames_delivered_per_second": measured.playing.frames / plan.seconds,
        "daphne_cpu_ms_per_frame": measured.cpu_ms_per_frame("daphne"),
        "worker_cpu_ms_per_frame": measured.cpu_ms_per_frame("worker"),
        "worker_cpu_ms_per_drawn_frame": measured.cpu_ms_per_drawn_frame("worker"),
        "client_cpu_ms_per_frame": measured.cpu_ms_per_frame("client"),
        "daphne_cpu_ms_per_input": measured.cpu_ms_per_input("daphne"),
        "worker_cpu_ms_per_input": measured.cpu_ms_per_input("worker"),
        "players_within_p95_150ms": float(best),
        "players_per_core_p95_150ms": best / (os.cpu_count() or 1),
        "soak_seconds": float(plan.soak_seconds),
        "soak_rss_growth_pct": max(growth.values()),
        "soak_daphne_rss_growth_pct": max(value for name, value in growth.items() if name.startswith("daphne")),
        "soak_worker_rss_growth_pct": max(value for name, value in growth.items() if name.startswith("worker")),
        "soak_groups_left": float(groups_left),
        "consumers_killed": float(killed),
    }


def sessions_ended(stack: Stack, session_ids: list[str], seconds: float = 90) -> None:
    """End these sessions and wait until the workers report every slot free again (they stop drawing them).
    After a round past what the machine serves, a close waits in the worker's channel behind the inputs still
    queued there, and the slot shows free only at the worker's next heartbeat after it: the wait is long."""
    from play.models import PlaySession
    from play.services import session_end

    for session in PlaySession.objects.filter(pk__in=session_ids).select_related("worker"):
        session_end(session=session, reason="the benchmark's round is over")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        workers = stack.daphnes[0].health()["inference_workers"]
        if workers.get("free_slots") == workers.get("slots"):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the workers did not free the ended sessions' slots within {seconds:.0f} s: {workers}")


def stack_started(stack: Stack, shape: Shape, slots: int, environment: dict[str, str]) -> None:
    """The daphnes, then the workers (worker i on daphne i, in turn), once the platform counts their slots."""
    from tests.fixtures import ROOT, start_platform, wait_until
    from workers.services import worker_issue_token

    for index in range(1, shape.daphnes + 1):
        log = stack.logs / f"daphne{index}.log"
        stack.daphnes.append(start_platform("--no-in-process-worker", environment=environment, log=log))
    for index in range(shape.workers):
        _, token = worker_issue_token(name=f"load-bench-{time.monotonic_ns()}")
        url = f"{stack.daphnes[index % shape.daphnes].ws_url}/ws/workers/"
        command = [sys.executable, "-m", "inference.worker", "--url", url, "--token", token, "--slots", str(slots)]
        stack.workers.append(
            subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
    wanted = slots * shape.workers
    wait_until(lambda: stack.daphnes[0].health()["inference_workers"]["slots"] == wanted, timeout_seconds=120)


def crowd_round(stack: Stack, players: int, worlds: int, seconds: float, engine: str) -> Round:
    """`players` spread over `worlds` new Live worlds on `engine`, played for `seconds`."""
    per_world = [players // worlds + (index < players % worlds) for index in range(worlds)]
    live = [fixtures(1, live=True, spectators=count - 1, participate=True, engine=engine) for count in per_world]
    return asyncio.run(crowd(stack, live, seconds))


async def crowd(stack: Stack, live: list[tuple[list[str], list[str]]], seconds: float) -> Round:
    """Every player of every Live world connected at once (spread over the daphnes in turn), watching for a
    while and then pressing keys for `seconds`; the CPU each process spent on each part."""
    from bench.runtime_speed import connect

    addresses = stack.addresses
    players = []
    for session_ids, cookies in live:
        # A Live world has one session; its owner and the participants all join it.
        for cookie in cookies:
            address = addresses[len(players) % len(addresses)]
            players.append(Player(await connect(address, session_ids[0], cookie), session=session_ids[0]))
    pids = stack.pids() | {"client": os.getpid()}
    started = tally(players, pids)
    await asyncio.gather(*(play(player, seconds * WATCHING, interval=None) for player in players))
    watched = tally(players, pids)
    await asyncio.gather(*(play(player, seconds, interval=1.0) for player in players))
    played = tally(players, pids)
    for player in players:
        await player.socket.close()
    return Round(players, watching=watched - started, playing=played - watched)


def players_within_target(first: Round, attempt: Callable[[int], Round], budget_seconds: float) -> int:
    """The most players within the target: from the first round's count, doubled until a round misses it (or
    halved until one meets it), then the gap between the best and the worst halved, until the budget is spent
    or the gap is a tenth of the best."""
    best, worst = (len(first.players), None) if first.within_target else (0, len(first.players))
    deadline = time.monotonic() + budget_seconds
    while time.monotonic() < deadline:
        if worst is None:
            candidate = min(best * 2, MOST_PLAYERS)
        elif worst - best <= max(1, best // 10):
            break
        else:
            candidate = (best + worst) // 2
        if candidate in (0, best):
            break
        if attempt(candidate).within_target:
            best = candidate
        else:
            worst = candidate
    return best


async def play(player: Player, seconds: float, interval: float | None) -> None:
    """Read and acknowledge frames; every `interval` (jittered; None: never) toggle a key and time it to its
    frame."""
    rng = random.Random(id(player))  # noqa: S311 (jitter, not a secret)
    deadline = time.monotonic() + seconds
    next_input = time.monotonic() + rng.uniform(0, interval) if interval is not None else math.inf
    sent: dict[int, float] = {}  # client seq -> when it was sent
    awaiting: dict[int, float] = {}  # session sequence -> when its input was sent
    while (now := time.monotonic()) < deadline:
        if now >= next_input:
            player.inputs += 1
            kind = "key_down" if player.inputs % 2 else "key_up"
            sent[player.inputs] = time.perf_counter()
            if not await sent_or_dropped(player, {"type": kind, "key": "KeyW", "seq": player.inputs}):
                return
            next_input = now + interval * rng.uniform(0.7, 1.3) if interval is not None else math.inf
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
            number, applied = int.from_bytes(message[:4]), int.from_bytes(message[4:8])
            player.frames.add(number)
            if number >= player.acknowledged + JPEG_ACK_TICKS:
                player.acknowledged = number
                if not await sent_or_dropped(player, {"type": "ack", "frame": number}):
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

    player = Player(await connect(address, session, cookie), session=session)
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


def cpu_seconds(pid: int) -> float:
    """The CPU time a process has spent, user and system, all its threads (proc(5): utime and stime)."""
    # The name field (in parentheses) may hold spaces: the counted fields come after its closing parenthesis.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def group_memberships_after_disconnect(session_ids: list[str], seconds: float = DAPHNE_CLOSE_SECONDS + 5) -> int:
    """Members still in these sessions' channel-layer groups once every socket has closed: the default layer's
    sorted sets (channels-redis keeps one a group), and the frames layer's pub/sub subscriptions (one a daphne
    process that has a member). Disconnects are handled after the sockets close, behind whatever each daphne
    still has to do; by default this waits past the time daphne gives a consumer to finish, so a membership
    counted then is never going to be left."""
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


def shape_arguments(argv: list[str] | None) -> Plan:
    """The plan the command line names; nonsense is refused with what is wrong."""
    parser = argparse.ArgumentParser(prog="python -m bench.load_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=FULL.shape.players)
    parser.add_argument("--worlds", type=int, default=FULL.shape.worlds, help="Live worlds the players spread over")
    parser.add_argument("--daphnes", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--engine", choices=ENGINES, default="raycaster", help="the engine the worlds run on")
    parser.add_argument("--seconds", type=float, default=FULL.seconds, help="how long the shape is played")
    parser.add_argument("--soak-seconds", type=float, default=QUICK.soak_seconds)
    parser.add_argument("--search-seconds", type=float, default=QUICK.search_seconds, help="0: no search")
    parser.add_argument("--round-seconds", type=float, default=QUICK.round_seconds)
    arguments = parser.parse_args(argv)
    problems = []
    if not 1 <= arguments.players <= MOST_PLAYERS:
        problems.append(f"--players takes 1..{MOST_PLAYERS}")
    if not 1 <= arguments.worlds <= arguments.players:
        problems.append("--worlds takes 1..the number of players (each world needs one)")
    for name in ("daphnes", "workers"):
        if not 1 <= getattr(arguments, name) <= MOST_PROCESSES:
            problems.append(f"--{name} takes 1..{MOST_PROCESSES}")
    for name in ("seconds", "round_seconds"):
        if getattr(arguments, name) <= 0:
            problems.append(f"--{name.replace('_', '-')} must be more than 0")
    if arguments.search_seconds < 0:
        problems.append("--search-seconds must be 0 or more")
    # The soak measures memory growth after its warm-up: a quarter of it, at least a second.
    if arguments.soak_seconds < 4:
        problems.append("--soak-seconds must be at least 4")
    if problems:
        parser.error("; ".join(problems))
    shape = Shape(arguments.players, arguments.worlds, arguments.daphnes, arguments.workers, arguments.engine)
    return Plan(
        shape,
        seconds=arguments.seconds,
        soak_seconds=arguments.soak_seconds,
        warm_up_seconds=arguments.soak_seconds / 4,
        search_seconds=arguments.search_seconds,
        round_seconds=arguments.round_seconds,
    )


def main(argv: list[str] | None = None) -> None:
    from bench.__main__ import RESULTS, table

    plan = shape_arguments(argv)
    started = time.perf_counter()
    figures = measure(plan)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "load_bench.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(table("load_bench", figures, time.perf_counter() - started))


if __name__ == "__main__":
    main()
