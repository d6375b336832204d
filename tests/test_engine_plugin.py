"""A studio's own engine, installed as a package of its own, is offered in the studio and plays end to end.

The package is written and installed here (pip, into a folder of its own on the platform's path), and
registers through the `worldloom.engines` entry-point group: nothing in Worldloom names it.
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from PIL import Image

from accounts.tests.factories import UserFactory
from play.tests.factories import PlaySessionFactory, WorldVersionFactory
from tests.fixtures import LivePlatform, Player, cookie_for, platform_environment, play, start_platform
from workers.selectors import engines_offered

pytestmark = pytest.mark.slow

# A whole engine: a chequerboard that scrolls with the tick and shifts as the player holds W.
PLUGIN_MODULE = """
import io
import json

import numpy as np
from PIL import Image

from inference.engine import EngineFacts, Frame, WorldEngine


class CheckersEngine(WorldEngine):
    name = "checkers"
    facts = EngineFacts(device="cpu", width=48, height=32, frames_per_second=20)

    def __init__(self, device="cpu"):
        self.sessions = {}

    def open_session(self, spec, snapshot=None, *, session=None):
        self.sessions[session] = json.loads(snapshot) if snapshot else {"tick": 0, "offset": 0}
        return session

    def step(self, batch):
        frames = []
        for session, action, events in batch:
            state = self.sessions[session]
            state["tick"] += 1
            state["offset"] += 4 if action & 1 else 0
            rows, columns = np.indices((32, 48))
            board = ((rows // 8 + (columns + state["offset"]) // 8) % 2 * 255).astype(np.uint8)
            encoded = io.BytesIO()
            Image.fromarray(np.stack([board] * 3, axis=-1)).save(encoded, format="JPEG")
            frames.append(Frame(session, state["tick"], encoded.getvalue()))
        return frames

    def snapshot(self, session):
        return json.dumps(self.sessions[session]).encode()

    def close(self, session):
        self.sessions.pop(session, None)
"""
PLUGIN_PROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "worldloom-checkers"
version = "1.0"

[project.entry-points."worldloom.engines"]
checkers = "checkers_engine:CheckersEngine"
"""


@pytest.fixture(scope="module")
def plugin_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin package built and installed by pip into a folder of its own."""
    source = tmp_path_factory.mktemp("checkers-source")
    (source / "pyproject.toml").write_text(textwrap.dedent(PLUGIN_PROJECT))
    (source / "checkers_engine.py").write_text(textwrap.dedent(PLUGIN_MODULE))
    installed = tmp_path_factory.mktemp("checkers-installed")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target",
         str(installed), str(source)],
        check=True,
        timeout=120,
    )  # fmt: skip
    return installed


@pytest.fixture
def platform_with_plugin(
    transactional_db: None, plugin_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LivePlatform]:
    """The platform and its in-process worker with the plugin on their path, as `pip install` on a box puts it."""
    monkeypatch.syspath_prepend(str(plugin_folder))  # this test process validates the world as the studio does
    path = ":".join(filter(None, [str(plugin_folder), *sys.path]))
    platform = start_platform("--in-process-worker", environment=platform_environment(PYTHONPATH=path))
    yield platform
    platform.stop()


def test_an_engine_installed_as_a_package_is_offered_and_a_session_plays_on_it(
    platform_with_plugin: LivePlatform,
) -> None:
    assert "checkers" in engines_offered()
    creator = UserFactory()  # signed up: a player and a creator
    studio = requests.get(
        f"{platform_with_plugin.url}/studio/worlds/new/", headers={"Cookie": cookie_for(creator)}, timeout=10
    )
    assert (
        studio.status_code == 200 and '<option value="checkers">checkers: 48x32 at 20 fps, cpu</option>' in studio.text
    )
    version = WorldVersionFactory()
    version.document["world"]["engine"] = "checkers"
    version.save()
    session = PlaySessionFactory(version=version, engine="checkers")

    async def script(player: Player) -> list[tuple[int, int, bytes]]:
        await player.read_until(lambda p: len(p.frames) >= 3, seconds=30)
        still = player.frames[-1][2]
        await player.send("key_down", key="KeyW")
        await player.read_until(lambda p: p.frames[-1][2] != still, seconds=10)
        return player.frames

    frames = asyncio.run(play(platform_with_plugin, session, cookie_for(session.owner), script))
    numbers = [number for number, _, _ in frames]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert Image.open(io.BytesIO(frames[-1][2])).size == (48, 32)
