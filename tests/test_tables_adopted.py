"""A database filled by the code before the apps were layered keeps every row of the tables that moved.

Stories and play sessions lived in a `stories` app, content settings in the gallery. The dump was made by that
code: migrate, load_demo, then four sessions with logged inputs and snapshots, and one person's content settings.
"""

from __future__ import annotations

import gzip
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

DUMP = Path(__file__).parent / "data" / "database_before_the_redesign.sql.gz"
MOVED = {
    "stories_story": "worlds_story",
    "stories_beat": "worlds_beat",
    "stories_story_characters": "worlds_story_characters",
    "stories_playsession": "play_playsession",
    "stories_playsession_participants": "play_playsession_participants",
    "stories_sessionevent": "play_sessionevent",
    "stories_sessionsnapshot": "play_sessionsnapshot",
    "gallery_profile": "accounts_contentsettings",
}


def rows(database: Path, table: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(database) as connection:
        return connection.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()  # noqa: S608 our table names


@pytest.mark.slow
def test_migrating_a_database_of_the_stories_app_moves_every_row(tmp_path: Path) -> None:
    database = tmp_path / "before.sqlite3"
    with sqlite3.connect(database) as connection:
        connection.executescript(gzip.decompress(DUMP.read_bytes()).decode())
    before = {table: rows(database, table) for table in MOVED}
    assert all(before.values()), "the dump holds rows in every moved table"

    environment = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "SECRET_KEY": "migration-test"}
    environment.pop("REDIS_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], env=environment, check=True, timeout=120)

    assert {new: rows(database, new) for new in MOVED.values()} == {MOVED[old]: kept for old, kept in before.items()}
    with sqlite3.connect(database) as connection:
        tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        labels = connection.execute(
            "SELECT app_label, model FROM django_content_type"
            " WHERE model IN ('story', 'beat', 'playsession', 'profile', 'contentsettings')"
        ).fetchall()
    assert not {name for name in tables if name.startswith("stories_") or name == "gallery_profile"}
    assert sorted(labels) == [
        ("accounts", "contentsettings"),
        ("play", "playsession"),
        ("worlds", "beat"),
        ("worlds", "story"),
    ]
    # The models read what was adopted: a session's log replays from its snapshot as before.
    reading = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from play.models import PlaySession; s = PlaySession.objects.order_by('created_at').first(); "
            "print(s.events.count(), bytes(s.snapshots.get().engine_state), s.version.world.stories.count())",
        ],
        env=environment,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert reading.stdout.split("\n")[-2] == "3 b'\\x00engine\\xff' 1"
