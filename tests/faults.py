"""Private services and processes for the fault tests: a Redis and a PostgreSQL of their own on free ports,
a platform on a port chosen in advance (so a restart comes back where the clients reconnect), and a Celery
worker. The machine's shared Redis and PostgreSQL are never stopped: other test runs use them."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.fixtures import ROOT, free_port

POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")


def binary_or_skip(path: str | Path) -> str:
    """The binary's path; the test is skipped (with the reason) only when it is not installed at all."""
    found = shutil.which(str(path))
    if found is None:
        pytest.skip(f"{path} is not installed on this machine")
    return found


class CapturedOutput:
    """A process's output read on a thread of its own, so the pipe never fills and the test can search it."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self.read, args=(process,), daemon=True)
        self.thread.start()

    def read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self.lines.append(line)

    def text(self) -> str:
        return "".join(self.lines)


def stop(process: subprocess.Popen[str], timeout_seconds: float = 10) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout_seconds)


class PrivateRedis:
    """A redis-server of this test's own, without persistence: a restart comes back empty, as a crash would."""

    def __init__(self) -> None:
        self.binary = binary_or_skip("redis-server")
        self.port = free_port()
        self.directory = tempfile.mkdtemp(prefix="worldloom-redis-")
        self.process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.directory,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError):
                if redis.Redis(port=self.port, socket_connect_timeout=1).ping():
                    return
            time.sleep(0.1)
        raise AssertionError(f"the private redis-server on port {self.port} did not answer within 15 s")

    def kill(self) -> None:
        """SIGKILL: connections drop at once and everything in memory is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.directory, ignore_errors=True)


@contextlib.contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis()
    try:
        server.start()
        yield server
    finally:
        server.close()


class PrivatePostgres:
    """A PostgreSQL cluster of this test's own (initdb in a temporary folder), trusting loopback."""

    def __init__(self) -> None:
        self.bin = Path(binary_or_skip(POSTGRES_BIN / "pg_ctl")).parent
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="worldloom-postgres-"))
        self.data = self.directory / "data"

    def command(self, *arguments: str, timeout_seconds: float = 60) -> subprocess.CompletedProcess[str]:
        # PostgreSQL refuses to run as root; CI runs as root, so the server runs as the postgres user there.
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        return subprocess.run(
            [*prefix, *arguments], capture_output=True, text=True, timeout=timeout_seconds, check=True
        )

    def url(self, database: str = "worldloom") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def initialise(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.directory, user="postgres")
        self.command(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync")
        self.start()
        self.command(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "worldloom")

    def start(self) -> None:
        # fsync off: the cluster lives for one test; -w waits (bounded by -t) until it accepts connections.
        self.command(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.directory / "log"),
            "-w",
            "-t",
            "30",
            "-o",
            f"-p {self.port} -k {self.directory} -c fsync=off -c listen_addresses=127.0.0.1",
            "start",
        )

    def stop(self) -> None:
        """Fast shutdown: open transactions are rolled back and every connection is cut, as in a restart."""
        self.command(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop")

    def close(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.SubprocessError):
                self.command(
                    str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop"
                )
        shutil.rmtree(self.directory, ignore_errors=True)


@contextlib.contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    try:
        server.initialise()
        yield server
    finally:
        server.close()


def resident_kib(pid: int) -> int:
    """A process's resident memory (VmRSS) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for process {pid}")


def child_pids(pid: int) -> list[int]:
    """The direct children of a process, from /proc (every thread's children list)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            children += [int(child) for child in (task / "children").read_text().split()]
    return children


def celery_worker(queue: str, environment: dict[str, str]) -> tuple[subprocess.Popen[str], CapturedOutput]:
    """A real prefork Celery worker with one child, on a queue of its own so no other worker takes its tasks."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "prefork",
            "--concurrency",
            "1",
            "--queues",
            queue,
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT / "platform",
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return process, CapturedOutput(process)
