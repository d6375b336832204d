"""Gallery speed: page and search latency with 10,000 published worlds in PostgreSQL under 50 concurrent clients,
and the SQL queries one gallery page costs at page sizes 20 and 100 (keyset pages: constant, not growing).

It builds a throwaway database next to the configured one (`<name>_gallery_bench`, dropped at the end), seeds
it in bulk, serves it as production does (`DAPHNES` daphne processes, `manage.py serve`, behind HAProxy with the
cluster's configuration) and drives that over HTTP. Clients follow the "More" links as people do, so deep pages
are measured as well as first ones, and each is signed in as a person of its own: anonymous searches are
throttled to 30 a minute per address, and 50 clients from one address, each searching several times a second,
are not 50 anonymous visitors. Each client waits for its answer before asking again (no think time), so the
latency is the queue at the server: about CLIENTS / requests_per_second.

The load generator is one asyncio event loop in this process, apart from the servers' processes: about 0.5 ms
of CPU a request, where 50 threads of `requests` sharing one GIL cost several times that and added their own
wait for the GIL to every timing.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from bench import Skipped

ROOT = Path(__file__).resolve().parent.parent
WORDS = (
    "harbour fog lighthouse keeper desert caravan moon station orbit forest witch tower ember river "
    "glass city neon rain garden clock engine frost mountain pilgrim archive ghost signal salt bridge "
    "lantern market island storm dragon library tide canyon comet quiet"
).split()
# Descriptions are mostly words no search asks for, so a searched word matches a few percent of the worlds
# as in a real gallery, not every one of them.
FILLER = [
    f"{first}{second}"
    for first in ("ka", "lo", "mi", "te", "su", "ra", "no", "ve")
    for second in ("ban", "dor", "lin", "mar", "sek", "tov", "ril", "gan", "pul", "zen")
]
CATEGORIES = ("games", "stories", "characters", "live")
SORTS = ("trending", "new", "top")
CLIENTS = 50
# One daphne per core of the 2-core machine the README's figures come from: a daphne runs Django on one GIL,
# and a third process only adds switching (measured: 2 and 3 gave the same throughput, within the noise).
DAPHNES = 2
NEXT_LINK = re.compile(r'rel="next" href="\?([^"]+)"')


def django_ready() -> None:
    if str(ROOT / "platform") not in sys.path:
        sys.path.append(str(ROOT / "platform"))  # platform/ is a source root; append, never shadow the stdlib
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def seed(count: int) -> None:
    """Worlds, approved versions and listings written in bulk: publishing 10,000 worlds one by one through the
    services (with their checks) would take far longer than the measurement and measure something else."""
    from django.utils import timezone

    from accounts.models import User
    from gallery.models import Listing
    from gallery.services import search_vector
    from worlds.models import Tag, World, WorldVersion

    generator = random.Random(7)  # noqa: S311 - reproducible made-up content, not secrets
    creators = User.objects.bulk_create([User(username=f"bench-creator-{index}") for index in range(200)])
    moderator = User.objects.create(username="bench-moderator")
    tags = Tag.objects.bulk_create([Tag(name=word) for word in WORDS])
    now = timezone.now()
    for start in range(0, count, 1000):
        numbers = range(start, min(start + 1000, count))
        texts = [
            (
                f"{generator.choice(WORDS).title()} {generator.choice(WORDS).title()} {number}",
                f"A {generator.choice(WORDS)} of {generator.choice(WORDS)} where the {generator.choice(WORDS)} waits.",
                " ".join([*generator.choices(FILLER, k=40), generator.choice(WORDS)]),
            )
            for number in numbers
        ]
        worlds = World.objects.bulk_create(
            [
                World(
                    owner=generator.choice(creators),
                    title=title,
                    slug=f"bench-{number}",
                    logline=logline,
                    description=description,
                    category=CATEGORIES[number % 4],
                )
                for number, (title, logline, description) in zip(numbers, texts, strict=True)
            ]
        )
        versions = WorldVersion.objects.bulk_create(
            [
                WorldVersion(
                    world=world,
                    number=1,
                    published_by=world.owner,
                    status="approved",
                    reviewed_by=moderator,
                    document={"world": {"title": world.title}, "characters": []},
                )
                for world in worlds
            ]
        )
        listings = Listing.objects.bulk_create(
            [
                Listing(
                    world=world,
                    version=version,
                    creator_id=world.owner_id,
                    slug=world.slug,
                    title=world.title,
                    logline=world.logline,
                    description=world.description,
                    category=world.category,
                    content_rating=generator.choice(["everyone", "everyone", "teen", "mature"]),
                    listed_at=now - timedelta(minutes=generator.randrange(525_600)),
                    play_count=generator.randrange(5000),
                    like_count=generator.randrange(800),
                    trending_score=generator.uniform(150, 160),
                    search_text=generator.choice(WORDS),
                )
                for world, version in zip(worlds, versions, strict=True)
            ]
        )
        Listing.tags.through.objects.bulk_create(
            [
                Listing.tags.through(listing=listing, tag=tag)
                for listing in listings
                for tag in generator.sample(tags, 3)
            ]
        )
    Listing.objects.update(search_vector=search_vector())


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def readers(count: int) -> list[str]:
    """Session cookies of `count` signed-in people, one each, made directly (as the tests' force_login does)."""
    from django.test import Client

    from accounts.models import User

    cookies = []
    for number in range(count):
        client = Client()
        client.force_login(User.objects.create(username=f"bench-reader-{number}"))
        cookies.append(client.cookies["sessionid"].value)
    return cookies


async def browse(url: str, number: int, cookie: str, count: int, timings: dict[str, list[float]]) -> None:
    """One person: a gallery page (following "More" while there is one), then a search, `count` times."""
    import aiohttp

    generator = random.Random(number)  # noqa: S311 - a reproducible browsing pattern
    connector = aiohttp.TCPConnector(limit=1)  # one connection, kept alive, as a browser tab uses
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, cookies={"sessionid": cookie}, timeout=timeout) as session:
        next_query = ""
        for _ in range(count):
            if not next_query:
                next_query = f"sort={generator.choice(SORTS)}"
            path = f"/gallery/{generator.choice(CATEGORIES)}/?{next_query}"
            started = time.perf_counter()
            async with session.get(url + path) as response:
                text = await response.text()
            gallery_ms = (time.perf_counter() - started) * 1000
            response.raise_for_status()
            found = NEXT_LINK.search(text)
            next_query = found.group(1).replace("&amp;", "&") if found else ""
            words = " ".join(generator.sample(WORDS, generator.choice((1, 1, 2))))
            started = time.perf_counter()
            async with session.get(f"{url}/search/", params={"q": words}) as response:
                await response.read()
            search_ms = (time.perf_counter() - started) * 1000
            response.raise_for_status()
            timings["gallery"].append(gallery_ms)
            timings["search"].append(search_ms)


def load(url: str, requests_per_kind: int, cookies: list[str]) -> tuple[dict[str, list[float]], float]:
    """CLIENTS people at once, each alternating gallery pages and searches; the timings and the wall seconds."""
    timings: dict[str, list[float]] = {"gallery": [], "search": []}
    count = max(1, requests_per_kind // CLIENTS)

    async def everyone() -> None:
        clients = [browse(url, number, cookies[number], count, timings) for number in range(CLIENTS)]
        outcomes = await asyncio.gather(*clients, return_exceptions=True)
        failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        if failures:  # any failure must fail the run, not silently thin the samples
            raise RuntimeError(f"{len(failures)} of {CLIENTS} clients failed, the first with: {failures[0]!r}")

    started = time.perf_counter()
    asyncio.run(everyone())
    return timings, time.perf_counter() - started


class Balanced:
    """DAPHNES platforms behind HAProxy, configured as `manage.py run_cluster` configures it."""

    def __init__(self, environment: dict[str, str]) -> None:
        from shell.cluster import ClusterShape, haproxy_config
        from tests.fixtures import free_port, start_platform

        haproxy = shutil.which("haproxy")
        if haproxy is None:
            raise Skipped("it serves through HAProxy, as production does: apt-get install haproxy (.ci/run does)")
        self.platforms = []
        self.balancer: subprocess.Popen[bytes] | None = None
        self.folder = Path(tempfile.mkdtemp(prefix="worldloom-gallery-bench-"))
        try:
            self.platforms = [start_platform(environment=environment) for _ in range(DAPHNES)]
            self.port = free_port()
            shape = ClusterShape(daphnes=DAPHNES, workers=0, port=self.port)
            config = self.folder / "haproxy.cfg"
            config.write_text(haproxy_config(shape, [platform.port for platform in self.platforms]))
            self.balancer = subprocess.Popen([haproxy, "-db", "-f", str(config)], stderr=subprocess.DEVNULL)
            self.url = f"http://127.0.0.1:{self.port}"
            self.wait_answering()
        except BaseException:
            self.stop()
            raise

    def wait_answering(self) -> None:
        import requests

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.url}/livez", timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise RuntimeError("HAProxy did not answer within 30 s")

    def output(self) -> str:
        return "\n".join(platform.output()[-2000:] for platform in self.platforms)

    def stop(self) -> None:
        if self.balancer is not None and self.balancer.poll() is None:
            self.balancer.terminate()
            self.balancer.wait(timeout=10)
        for platform in self.platforms:
            platform.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


def queries_per_page(size: int) -> int:
    """Queries the category page costs at this page size, counted in-process against the same database."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from gallery.services import listings_version_next

    client = Client(HTTP_HOST="127.0.0.1")
    # Counted in the steady state: the popular tags beside the list are cached for minutes, and the first
    # view after that costs one query more at any page size. The list itself is rendered afresh, as after a
    # change to the listings: seen again within seconds it would cost none.
    client.get("/gallery/games/", {"size": size, "sort": "top"}, secure=True)
    listings_version_next()
    with CaptureQueriesContext(connection) as captured:
        response = client.get("/gallery/games/", {"size": size, "sort": "top"}, secure=True)
    assert response.status_code == 200, response.status_code
    assert response.content.count(b'class="card world-card"') == size, "the page should be full"
    return len(captured)


def run(quick: bool) -> dict[str, float]:
    django_ready()
    from django.core.management import call_command
    from django.db import connection

    if connection.vendor != "postgresql":
        raise Skipped("it measures PostgreSQL (set DATABASE_URL=postgres://...; .ci/run starts one)")
    from tests.fixtures import platform_environment

    count, requests_per_kind = (1_000, 200) if quick else (10_000, 2_000)
    original_name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"]["NAME"] = f"{original_name}_gallery_bench"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    servers = None
    try:
        call_command("collectstatic", "--no-input", verbosity=0)
        seed(count)
        figures = {
            "queries_per_page_20": float(queries_per_page(20)),
            "queries_per_page_100": float(queries_per_page(100)),
        }
        cookies = readers(CLIENTS)
        servers = Balanced(platform_environment(CELERY_BROKER_URL="", LOG_LEVEL="WARNING"))
        load(servers.url, requests_per_kind=CLIENTS, cookies=cookies)  # warm the connections and caches
        timings, seconds = load(servers.url, requests_per_kind=requests_per_kind, cookies=cookies)
    except RuntimeError:
        if servers is not None:
            print(servers.output(), file=sys.stderr)
        raise
    finally:
        if servers is not None:
            servers.stop()
        connection.creation.destroy_test_db(original_name, verbosity=0)
    return {
        "gallery_p50_ms": statistics.median(timings["gallery"]),
        "gallery_p95_ms": percentile(timings["gallery"], 0.95),
        "search_p50_ms": statistics.median(timings["search"]),
        "search_p95_ms": percentile(timings["search"], 0.95),
        "requests_per_second": (len(timings["gallery"]) + len(timings["search"])) / seconds,
        **figures,
    }
