"""A conversation with a character published on its own comes back after a park, and its worker stays up."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from accounts.tests.factories import UserFactory
from play.models import PlaySession, SessionEvent, SessionStatus
from play.tests.factories import PlaySessionFactory
from tests.fixtures import LivePlatform, Player, cookie_for, platform_environment, play, start_platform, wait_until
from tests.test_narrative_full_stack import published, running, say

pytestmark = pytest.mark.slow


@pytest.fixture
def quickly_parking_platform(transactional_db: None) -> Iterator[LivePlatform]:
    """The platform with its in-process worker, parking a session within a second or so after its viewer leaves:
    before the worker's next snapshot (every 3 s), so that the reopen must replay the words said last."""
    environment = platform_environment(PLAY_PARK_AFTER_SECONDS="0.5", WORKER_HEARTBEAT_SECONDS="1")
    platform = start_platform("--in-process-worker", environment=environment)
    yield platform
    platform.stop()


# Eve is met in her scene (the raycaster draws her); sessions started before that are conversations alone.
@pytest.mark.parametrize("engine", ["raycaster", "conversation"])
def test_a_player_who_leaves_eve_and_comes_back_is_answered_and_the_worker_stays_healthy(
    quickly_parking_platform: LivePlatform, engine: str
) -> None:
    creator = UserFactory()
    session = PlaySessionFactory(version=published("eve-keeper.json", creator), owner=creator, engine=engine)
    cookie = cookie_for(creator)

    async def speak_and_leave(player: Player) -> None:
        await player.read_until(running, seconds=30)
        sent = await player.send("speech", character="Eve", text="Hello, keeper of the light.")
        await player.read_until(lambda p: p.last("accepted") and p.last("accepted")["seq"] == sent)

    async def come_back_and_speak(player: Player) -> str:
        player.sequence = 1  # the same page (no ?browser=) numbers on from its last message
        await player.read_until(running, seconds=30)
        reply, _ = await say(player, "Are you still there?")
        return reply

    asyncio.run(play(quickly_parking_platform, session, cookie, speak_and_leave))
    # Parking has taken a loaded CI machine over 30 s; a session that never parks still fails here.
    wait_until(lambda: PlaySession.objects.get(pk=session.pk).status == SessionStatus.PARKED, timeout_seconds=60)
    spoken = SessionEvent.objects.get(session=session, kind="speech")
    assert spoken.applied_tick is not None
    assert spoken.applied_effects["events"] == [{"kind": "approach", "name": "Eve"}]
    # Coming back reopens the conversation from its snapshot and replays the words after it: that replay spun
    # the worker's engine thread forever.
    assert asyncio.run(play(quickly_parking_platform, session, cookie, come_back_and_speak))
    assert quickly_parking_platform.health()["status"] == "ok"
