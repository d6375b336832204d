"""Shared fixtures: a real daphne process serving the platform on the test database, and service probes."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
import redis
import requests
import websockets
from channels.db import database_sync_to_async
from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers, get_channel_layer
from channels_redis.core import RedisChannelLayer
from django.db import connections
from django.test import Client

from inference.language.tiny import write_tiny_model
from play.protocol import BROWSER_FRAME_HEADER

if TYPE_CHECKING:
    from accounts.models import User
    from play.models import PlaySession

ROOT = Path(__file__).resolve().parent.parent


def pytest_report_header(config: pytest.Config) -> list[str]:
    from django.conf import settings

    layer = settings.CHANNEL_LAYERS["default"]["BACKEND"].rsplit(".", 1)[-1]
    database = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    broker = "eager (no broker)" if settings.CELERY_TASK_ALWAYS_EAGER else "broker configured"
    return [f"worldloom: database {database}, channel layer {layer}, celery {broker}"]


# Fixtures that need the database or start processes: a test using one is not in the fast tier.
HEAVY_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_setup", "live_platform", "browser", "page", "redis_url", "client"}
)
HEAVY_MARKERS = ("django_db", "slow", "browser", "services")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="only the tests that need no database and start no process (make test-fast)",
    )


def is_heavy(item: pytest.Item) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    return bool(fixtures & HEAVY_FIXTURES) or any(item.get_closest_marker(name) for name in HEAVY_MARKERS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--fast"):
        return
    heavy = [item for item in items if is_heavy(item)]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = [item for item in items if not is_heavy(item)]


SignIn = Callable[["User"], Client]


@pytest.fixture
def signed_in() -> SignIn:
    """A test client signed in as the person given (their session is made directly, without the log-in form)."""

    def client_for(user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return client_for


@pytest.fixture(scope="session")
def static_files_collected() -> None:
    """Pages name their static files by hash, so the manifest must exist before any page renders."""
    from django.core.management import call_command

    call_command("collectstatic", "--no-input", verbosity=0)


@pytest.fixture(autouse=True)
def static_files_for_pages(request: pytest.FixtureRequest) -> None:
    """Collected once, for the tests that can render a page (they use the database); pure tests skip it."""
    if is_heavy(request.node):
        request.getfixturevalue("static_files_collected")


@pytest.fixture(autouse=True)
def gallery_lists_rendered_afresh(request: pytest.FixtureRequest) -> None:
    """Each test starts with a database of its own, but the cache (Redis in CI) outlives it: a gallery list
    rendered in an earlier test, filed under the same version, would be shown in this one."""
    if is_heavy(request.node):
        from gallery.services import listings_version_next

        listings_version_next()


@pytest_asyncio.fixture
async def database_connections_closed_after() -> AsyncIterator[None]:
    """For async tests: close the connection database_sync_to_async opened in its worker thread.

    pytest-django closes only the main thread's connection; one left open in the executor thread keeps
    PostgreSQL from dropping the test database at the end of the run.
    """
    yield
    await database_sync_to_async(connections.close_all)()


@pytest_asyncio.fixture
async def channel_layers_closed_after() -> AsyncIterator[None]:
    """For async tests of consumers: close the channel layers this test's event loop used and start the next test
    with new ones. A layer outlives the loop that used it; a consumer still receiving when its loop ended (its
    test failed, or its disconnect timed out on a loaded machine) leaves the layer's receive lock taken, bound to
    that dead loop, and every later test on the layer fails."""
    yield
    for layer in list(channel_layers.backends.values()):
        if isinstance(layer, RedisChannelLayer):
            with contextlib.suppress(Exception):
                await layer.close_pools()
    channel_layers.backends.clear()


def another_process_layer() -> Any:
    """The channel layer as another process holds it: on Redis, its channels' messages wait in an inbox of its
    own, which only that process reads (this one's readers would pull them into their buffers)."""
    layer = get_channel_layer()
    return channel_layers.make_backend(DEFAULT_CHANNEL_LAYER) if isinstance(layer, RedisChannelLayer) else layer


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def database_url_for_processes() -> str:
    """A URL for the database the test run is using, for processes the tests start."""
    from django.db import connection

    database = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(database['NAME']).resolve()}"
    password = f":{database['PASSWORD']}" if database["PASSWORD"] else ""
    return (
        f"postgres://{database['USER']}{password}@{database['HOST'] or '127.0.0.1'}:{database['PORT'] or 5432}"
        f"/{database['NAME']}"
    )


@functools.cache
def tiny_language_model() -> Path:
    """A tiny random chat model on disk, once per test run: platforms under test load it in a blink. It writes
    noise, so its choices never pass the measures and the authored ones are offered: tests stay repeatable."""
    return write_tiny_model(Path(tempfile.mkdtemp(prefix="worldloom-tiny-model-")))


def platform_environment(**overrides: str) -> dict[str, str]:
    """The environment for a platform process that shares this test run's database and services."""
    from django.conf import settings

    environment = dict(os.environ)
    environment.update(
        DATABASE_URL=database_url_for_processes(),
        SECRET_KEY=settings.SECRET_KEY,
        HTTPS="false",
        DEBUG="false",
        PYTHONUNBUFFERED="1",
        WORLDLOOM_LANGUAGE_MODEL=str(tiny_language_model()),
    )
    environment.update(overrides)
    return environment


@dataclass
class Endpoint:
    """Where browsers and workers connect: a daphne process, or a balancer in front of several."""

    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"


@dataclass
class LivePlatform(Endpoint):
    """A daphne process serving the whole platform, as `manage.py serve` runs it."""

    process: subprocess.Popen[str]
    log: Path | None = None  # where its output goes, when not to a pipe

    def health(self) -> dict[str, Any]:
        return requests.get(f"{self.url}/healthz", timeout=10).json()

    def output(self) -> str:
        self.stop()
        if self.log is not None:
            return self.log.read_text(errors="replace")
        return self.process.stdout.read() if self.process.stdout else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_platform(
    *arguments: str, environment: dict[str, str] | None = None, port: int | None = None, log: Path | None = None
) -> LivePlatform:
    """`manage.py serve`, waited for (60 s at most) until it answers. A `port` fixed in advance lets a restarted
    platform come back where its clients reconnect; by default any free port. Its output goes to a pipe read when
    it stops, or to the file `log`: a process that logs more than a pipe holds (64 KiB) before it stops must
    have one, or every thread of it that logs waits on the full pipe."""
    port = port or free_port()
    with open(log, "w") if log is not None else contextlib.nullcontext() as log_file:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), *arguments],
            cwd=ROOT,
            env=environment or platform_environment(),
            stdout=log_file if log_file is not None else subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    platform = LivePlatform(process=process, port=port, log=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the platform exited at start:\n{platform.output()}")
        try:
            requests.get(f"{platform.url}/healthz", timeout=2)
            return platform
        except requests.RequestException:
            time.sleep(0.2)
        except BaseException:
            platform.stop()  # never leave a server holding the test database
            raise
    platform.stop()
    raise AssertionError(f"the platform did not answer within 60 s:\n{platform.output()}")


@pytest.fixture
def mail_folder(tmp_path: Path) -> Path:
    """Where the live platform's e-mail goes, a file a message (Django's file-based backend)."""
    return tmp_path / "mail"


def mail_to_folder(folder: Path) -> dict[str, str]:
    """The environment that makes a platform process write its e-mail into `folder`."""
    return {"EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend", "EMAIL_FILE_PATH": str(folder)}


@pytest.fixture
def live_platform(transactional_db: None, mail_folder: Path) -> Iterator[LivePlatform]:
    """The platform served by a real daphne with its in-process inference worker, on the test database."""
    platform = start_platform("--in-process-worker", environment=platform_environment(**mail_to_folder(mail_folder)))
    # /healthz answers before the worker has loaded its models; a test's first frames should not wait on that load.
    try:
        wait_until(lambda: platform.health()["inference_workers"]["connected"] == 1, timeout_seconds=60)
        yield platform
    finally:
        platform.stop()


def wait_until(condition: Any, timeout_seconds: float = 15.0, interval_seconds: float = 0.1) -> Any:
    """Poll `condition` until it returns something truthy; fail the test when time runs out."""
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(interval_seconds)
    raise AssertionError(f"condition not met within {timeout_seconds} s")


CHROMIUM = "/usr/bin/chromium"
# Chromium's background services try the network, which this machine closes; these flags keep it quiet.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium through Playwright (never a downloaded browser); skipped on a laptop without it."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI_REQUIRE_SERVICES"):
            pytest.fail(f"CI needs Chromium at {CHROMIUM}")
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running on this thread between calls, so Django would refuse
    # the test's own database work; the documented remedy (Playwright's Django notes) is this switch.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, live_platform: LivePlatform) -> Iterator[Any]:
    """A fresh browser tab whose relative URLs go to the live platform."""
    context = browser.new_context(base_url=live_platform.url)
    yield context.new_page()
    context.close()


@pytest.fixture
def redis_url() -> str:
    """A reachable Redis: the configured one, or the local default; skipped locally when there is none."""
    from django.conf import settings

    url = settings.REDIS_URL or "redis://127.0.0.1:6379/15"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError:
        if os.environ.get("CI_REQUIRE_SERVICES"):
            pytest.fail(f"CI needs Redis at {url}")
        pytest.skip(f"no Redis at {url}; .ci/run starts one")
    return url


def cookie_for(user: User) -> str:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


class Player:
    """A browser's side of the play protocol, as a plain WebSocket client."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.sequence = 0
        self.frames: list[tuple[int, int, bytes]] = []
        self.messages: list[dict[str, Any]] = []

    async def send(self, kind: str, **fields: Any) -> int:
        self.sequence += 1
        await self.connection.send(json.dumps({"type": kind, "seq": self.sequence, **fields}))
        return self.sequence

    async def read_until(self, condition: Any, seconds: float = 20) -> Any:
        """Read (and acknowledge frames) until `condition(self)` is truthy; return what it returned."""
        async with asyncio.timeout(seconds):
            while True:
                message = await self.connection.recv()
                if isinstance(message, bytes):
                    number, applied, _, _ = BROWSER_FRAME_HEADER.unpack_from(message)
                    self.frames.append((number, applied, message[BROWSER_FRAME_HEADER.size :]))
                    await self.connection.send(json.dumps({"type": "ack", "frame": number}))
                else:
                    self.messages.append(json.loads(message))
                found = condition(self)
                if found:
                    return found

    async def read_until_database(self, condition: Any, seconds: float = 20) -> None:
        """Keep reading while waiting for `condition()` to hold in the database (checked off the event loop)."""
        async with asyncio.timeout(seconds):
            while not await asyncio.to_thread(condition):
                with contextlib.suppress(TimeoutError):
                    await self.read_until(lambda _: False, seconds=0.1)

    def last(self, kind: str) -> dict[str, Any] | None:
        return next((message for message in reversed(self.messages) if message["type"] == kind), None)

    def offered(self) -> dict[str, Any] | None:
        """The last choices message with choices to take (or the story's end): a beat's first one has none
        while its choices are being written."""
        return next(
            (m for m in reversed(self.messages) if m["type"] == "choices" and (m["choices"] or m["ended"])), None
        )


async def play(platform: Endpoint, session: PlaySession, cookie: str, script: Any) -> Any:
    headers = {"Cookie": cookie, "Origin": platform.url}
    async with websockets.connect(f"{platform.ws_url}/ws/play/{session.pk}/", additional_headers=headers) as socket:
        return await script(Player(socket))


def choice_leading_to(session: PlaySession, beat: str, target: str) -> int:
    """The index of the offered choice at `beat` that leads to `target`. Choices are written live and may be
    generated rather than authored, so tests look up where each leads in the logged offer."""
    from play.models import SessionEvent

    offer = SessionEvent.objects.get(session=session, kind="offer", payload__beat=beat).payload
    return next(index for index, choice in enumerate(offer["choices"]) if choice["to"] == target)
