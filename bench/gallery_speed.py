"""Gallery speed: page and search latency with 10,000 published worlds in PostgreSQL under 50 concurrent clients,
and the SQL queries one gallery page costs at page sizes 20 and 100 (keyset pages: constant, not growing).

It builds a throwaway database next to the configured one (`<name>_gallery_bench`, dropped at the end), seeds
it in bulk, serves it with a real daphne (`manage.py serve`, as production runs it) and drives that over HTTP.
Clients follow the "More" links as people do, so deep pages are measured as well as first ones.
"""

from __future__ import annotations

import os
import random
import re
import statistics
import sys
import threading
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


def load(url: str, requests_per_kind: int) -> dict[str, list[float]]:
    """50 clients at once, each alternating gallery pages (following "More") and searches."""
    import requests

    timings: dict[str, list[float]] = {"gallery": [], "search": []}
    lock = threading.Lock()
    per_client = max(1, requests_per_kind // CLIENTS)

    def client(number: int) -> None:
        generator = random.Random(number)  # noqa: S311 - a reproducible browsing pattern
        session = requests.Session()
        next_query = ""
        for _ in range(per_client):
            if not next_query:
                next_query = f"sort={generator.choice(SORTS)}"
            path = f"/gallery/{generator.choice(CATEGORIES)}/?{next_query}"
            started = time.perf_counter()
            response = session.get(url + path, timeout=60)
            gallery_ms = (time.perf_counter() - started) * 1000
            response.raise_for_status()
            found = NEXT_LINK.search(response.text)
            next_query = found.group(1).replace("&amp;", "&") if found else ""
            words = " ".join(generator.sample(WORDS, generator.choice((1, 1, 2))))
            started = time.perf_counter()
            session.get(f"{url}/search/", params={"q": words}, timeout=60).raise_for_status()
            search_ms = (time.perf_counter() - started) * 1000
            with lock:
                timings["gallery"].append(gallery_ms)
                timings["search"].append(search_ms)

    failures: list[BaseException] = []

    def guarded(number: int) -> None:
        try:
            client(number)
        except Exception as error:  # any failure must fail the run, not silently thin the samples
            failures.append(error)

    threads = [threading.Thread(target=guarded, args=(number,)) for number in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(f"{len(failures)} of {CLIENTS} clients failed, the first with: {failures[0]!r}")
    return timings


def queries_per_page(size: int) -> int:
    """Queries the category page costs at this page size, counted in-process against the same database."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    # Counted in the steady state: the popular tags beside the list are cached for minutes, and the first
    # view after that costs one query more at any page size.
    client.get("/gallery/games/", {"size": size, "sort": "top"}, secure=True)
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
    from tests.fixtures import platform_environment, start_platform

    count, requests_per_kind = (1_000, 200) if quick else (10_000, 2_000)
    original_name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"]["NAME"] = f"{original_name}_gallery_bench"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    platform = None
    try:
        call_command("collectstatic", "--no-input", verbosity=0)
        seed(count)
        figures = {
            "queries_per_page_20": float(queries_per_page(20)),
            "queries_per_page_100": float(queries_per_page(100)),
        }
        # Under ASGI every request runs in a thread of its own, and a persistent connection stays with each
        # thread: the default DATABASE_CONN_MAX_AGE exhausts PostgreSQL's 100 connections at 50 clients.
        environment = platform_environment(CELERY_BROKER_URL="", LOG_LEVEL="WARNING", DATABASE_CONN_MAX_AGE="0")
        platform = start_platform(environment=environment)
        load(platform.url, requests_per_kind=CLIENTS)  # warm the connections and caches
        timings = load(platform.url, requests_per_kind=requests_per_kind)
    except RuntimeError:
        if platform is not None:
            print(platform.output()[-4000:], file=sys.stderr)
        raise
    finally:
        if platform is not None:
            platform.stop()
        connection.creation.destroy_test_db(original_name, verbosity=0)
    return {
        "gallery_p50_ms": statistics.median(timings["gallery"]),
        "gallery_p95_ms": percentile(timings["gallery"], 0.95),
        "search_p50_ms": statistics.median(timings["search"]),
        "search_p95_ms": percentile(timings["search"], 0.95),
        **figures,
    }
