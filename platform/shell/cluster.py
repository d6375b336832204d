"""A multi-process Worldloom on one machine: N daphne processes behind HAProxy, M inference workers and Celery.

The layout is production's (README, "Production, across several machines") on one host: every process shares
PostgreSQL and Redis, browsers and workers both come in through the balancer, and any daphne can serve any
session, since frames and messages travel over the Redis channel layer. The supervisor starts the processes in
order (daphnes, the balancer, Celery, then workers, which connect through the balancer), writes where each runs
to a state file (tests kill one by its pid), and stops them all within the stop deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import requests
from django.conf import settings

from shell.front import BUSY, busy_retry_after
from workers.services import worker_issue_token

ROOT = Path(__file__).resolve().parents[2]
# Every child gets SIGTERM at once and this long to go (each stops within its own 8 s); then it is killed.
STOP_DEADLINE_SECONDS = 9.0
START_DEADLINE_SECONDS = 60.0


@dataclass(frozen=True)
class ClusterShape:
    daphnes: int
    workers: int
    port: int  # the balancer's, where browsers and workers connect
    worker_slots: int = 4
    host: str = "127.0.0.1"


@dataclass
class RunningProcess:
    role: str  # "daphne", "balancer", "celery" or "worker"
    name: str
    pid: int
    port: int | None = None


@dataclass
class ClusterState:
    url: str
    processes: list[RunningProcess] = field(default_factory=list)


def haproxy_config(shape: ClusterShape, daphne_ports: list[int]) -> str:
    """HAProxy in front of the daphne processes: WebSocket upgrades pass (a tunnel may stay open an hour), a
    daphne that stops answering /livez is taken out within two seconds, and a connection refused by one is
    retried on another. Not /healthz: it is 503 while no worker is connected, and the workers themselves
    connect through here.

    Pages wait for a daphne in one queue here, each daphne given at most the requests it runs at once
    (HTTP_REQUESTS_RUNNING): in a queue of each daphne's own, a request that drew a busy one waited there while
    the other was free. Sockets are not counted: a daphne holds hundreds of them at once."""
    running = settings.HTTP_REQUESTS_RUNNING
    # A page that waited its whole turn here is told what a daphne tells it (shell.front), not HAProxy's own page.
    retry_after = busy_retry_after(settings.HTTP_REQUEST_WAIT_SECONDS)
    pages = "\n".join(
        f"    server daphne{index} {shape.host}:{port} check inter 1s fall 2 rise 1 maxconn {running}"
        for index, port in enumerate(daphne_ports, start=1)
    )
    sockets = "\n".join(
        f"    server daphne{index} {shape.host}:{port} track pages/daphne{index}"
        for index, port in enumerate(daphne_ports, start=1)
    )
    return f"""defaults
    mode http
    option redispatch
    retries 3
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout tunnel 1h

frontend worldloom
    bind {shape.host}:{shape.port}
    use_backend sockets if {{ path_beg /ws/ }}
    default_backend pages

backend pages
    balance leastconn
    timeout queue {round(settings.HTTP_REQUEST_WAIT_SECONDS * 1000)}ms
    http-error status 503 content-type "text/plain; charset=utf-8" hdr retry-after {retry_after} string "{BUSY}"
    option httpchk GET /livez
{pages}

backend sockets
    balance leastconn
{sockets}
"""


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


class Cluster:
    """The processes of one cluster; `start` brings them up in order, `stop` takes them all down."""

    def __init__(self, shape: ClusterShape, folder: Path) -> None:
        self.shape = shape
        self.folder = folder
        self.children: list[tuple[RunningProcess, subprocess.Popen[bytes]]] = []
        self.state = ClusterState(url=f"http://{shape.host}:{shape.port}/")
        self.stopping = threading.Event()  # set from a signal handler: a start in progress gives up

    def start(self) -> ClusterState:
        haproxy = shutil.which("haproxy")
        if haproxy is None:
            raise RuntimeError("the cluster needs HAProxy: apt-get install haproxy")
        self.folder.mkdir(parents=True, exist_ok=True)
        daphne_ports = [free_port(self.shape.host) for _ in range(self.shape.daphnes)]
        for index, port in enumerate(daphne_ports, start=1):
            serve = [sys.executable, "manage.py", "serve", "--no-in-process-worker", "--host", self.shape.host]
            self.spawn("daphne", f"daphne{index}", [*serve, "--port", str(port)], port=port)
        for port in daphne_ports:
            self.wait_answering(f"http://{self.shape.host}:{port}/healthz")
        config = self.folder / "haproxy.cfg"
        config.write_text(haproxy_config(self.shape, daphne_ports))
        self.spawn("balancer", "haproxy", [haproxy, "-db", "-f", str(config)], port=self.shape.port)
        self.wait_answering(f"{self.state.url}healthz")
        self.spawn("celery", "celery", [sys.executable, "-m", "celery", "-A", "config", "worker", "--loglevel", "INFO"])
        for index in range(1, self.shape.workers + 1):
            name = f"cluster-worker-{index}"  # the process is named as its token, so the platform's name finds it
            _, token = worker_issue_token(name=name)
            worker = [
                sys.executable, "-m", "inference.worker", "--url", f"ws://{self.shape.host}:{self.shape.port}/ws/workers/",
                "--token", token, "--slots", str(self.shape.worker_slots),
            ]  # fmt: skip
            self.spawn("worker", name, worker)
        self.write_state()
        return self.state

    def spawn(self, role: str, name: str, command: list[str], *, port: int | None = None) -> None:
        process = subprocess.Popen(command, cwd=ROOT, env=os.environ.copy())
        running = RunningProcess(role=role, name=name, pid=process.pid, port=port)
        self.children.append((running, process))
        self.state.processes.append(running)

    def wait_answering(self, url: str) -> None:
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while time.monotonic() < deadline:
            if self.stopping.is_set():
                raise RuntimeError("stopped while starting")
            self.fail_if_one_exited()
            try:
                requests.get(url, timeout=2)
                return
            except requests.RequestException:
                time.sleep(0.2)
        raise RuntimeError(f"{url} did not answer within {START_DEADLINE_SECONDS:g} s")

    def fail_if_one_exited(self) -> None:
        for running, process in self.children:
            if process.poll() is not None:
                raise RuntimeError(f"{running.name} exited with status {process.returncode} while starting")

    def write_state(self) -> None:
        (self.folder / "cluster.json").write_text(json.dumps(asdict(self.state), indent=2) + "\n")

    def stop(self) -> None:
        """SIGTERM to every child at once, then a kill for any still there at the deadline."""
        for _, process in self.children:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_DEADLINE_SECONDS
        for _, process in self.children:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
