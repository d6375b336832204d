"""Characters in play end to end: a real daphne and worker, MiniLM, and a real (tiny) language model.

What a player tells a character is kept by the platform and comes back in a later session of the same world;
the creator sees the prompt a reply was written from; a hook's branch is applied, logged and counted.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from accounts.tests.factories import UserFactory
from memories.models import Memory
from play.models import PlaySession, SessionEvent
from play.tests.factories import PlaySessionFactory
from tests.fixtures import ROOT, LivePlatform, Player, choice_leading_to, cookie_for, play, wait_until
from worlds.models import HookBranch
from worlds.services import slug_unique, world_from_document, world_publish

pytestmark = pytest.mark.slow


def published(name: str, owner: object) -> object:
    """A demo world made and published by `owner`, who may play their own newest submission.

    Sessions are made queued (by the factory), so the platform process dispatches them when the player
    arrives: its channel layer is the one the worker listens on in the embedded mode.
    """
    document = json.loads((ROOT / "worlds" / "demo_content" / name).read_text())
    # The demo story ships on the world model; the factory's sessions run the raycaster (fast on a busy machine,
    # and these tests are about words), so the version says so too.
    document["world"]["engine"] = "raycaster"
    world = world_from_document(document, owner=owner, slug=slug_unique(document["world"]["title"]))
    world_publish(world=world, by=owner)
    return world.versions.order_by("-number").first()


def running(player: Player) -> bool:
    """The session runs on a worker: it said so on arrival, or later."""
    welcome, status = player.last("welcome"), player.last("status")
    return (status or welcome or {}).get("state", (welcome or {}).get("status")) == "running"


async def say(player: Player, text: str) -> tuple[str, dict]:
    """Say `text` to Eve; the whole reply (once its final piece came) and the creator's debug prompt."""
    start = len(player.messages)
    await player.send("speech", character="Eve", text=text)

    def reply_start(p: Player) -> int | None:
        """Where the reply to `text` begins: its prompt comes first. A reply to words said before (the player left
        while it was being written) may still be arriving, and is not this one."""
        return next((start + i for i, m in enumerate(p.messages[start:]) if m["type"] == "debug_prompt"), None)

    def finished(p: Player) -> bool:
        begun = reply_start(p)
        return begun is not None and any(m["type"] == "character_line" and m["final"] for m in p.messages[begun:])

    await player.read_until(finished, seconds=60)
    begun = reply_start(player)
    assert begun is not None
    lines = [m["text"] for m in player.messages[begun:] if m["type"] == "character_line" and m["text"]]
    return " ".join(lines), player.messages[begun]


def test_a_character_remembers_what_the_player_said_in_an_earlier_session(live_platform: LivePlatform) -> None:
    creator = UserFactory()
    version = published("eve-keeper.json", creator)
    first = PlaySessionFactory(version=version, owner=creator, engine="conversation")
    cookie = cookie_for(creator)

    async def tell(player: Player) -> str:
        await player.read_until(running, seconds=30)
        reply, _ = await say(player, "My name is Ada and I lost a silver key at the old docks.")
        return reply

    assert asyncio.run(play(live_platform, first, cookie, tell))
    kept = wait_until(lambda: list(Memory.objects.filter(acquaintance__player=creator).values_list("text", flat=True)))
    assert kept == ["My name is Ada and I lost a silver key at the old docks."]
    assert SessionEvent.objects.get(session=first, kind="speech").applied_effects["reply"]

    second = PlaySessionFactory(version=version, owner=creator, engine="conversation")

    async def ask(player: Player) -> tuple[str, dict]:
        await player.read_until(running, seconds=30)
        return await say(player, "What did I lose at the docks?")

    reply, debug = asyncio.run(play(live_platform, second, cookie, ask))
    assert "silver key" in debug["sections"]["memories"]
    # Grounded: the reply opens with the remembered fact, said back to the player.
    assert reply.startswith("Your name is Ada and you lost a silver key at the old docks.")


def test_only_the_creator_is_shown_the_prompt(live_platform: LivePlatform) -> None:
    version = published("eve-keeper.json", UserFactory())
    player = UserFactory()
    session = PlaySessionFactory(version=version, owner=player, engine="conversation")

    async def talk(socket: Player) -> list[str]:
        await socket.read_until(running, seconds=30)
        await socket.send("speech", character="Eve", text="Hello there, keeper.")
        await socket.read_until(lambda p: (m := p.last("character_line")) and m["final"], seconds=60)
        return [message["type"] for message in socket.messages]

    kinds = asyncio.run(play(live_platform, session, cookie_for(player), talk))
    assert "character_line" in kinds and "debug_prompt" not in kinds


def test_a_hook_fired_in_play_applies_its_branch_and_counts_it_for_the_creator(live_platform: LivePlatform) -> None:
    creator = UserFactory()
    version = published("dark-lighthouse.json", creator)
    (hook,) = version.document["hooks"]
    assert hook["trigger"] == "beat" and hook["trigger_value"] == {"beat": "causeway"}
    session: PlaySession = PlaySessionFactory(version=version, owner=creator)

    async def respond(player: Player) -> None:
        # arrival -> stairs -> causeway, where the guardian hook fires; then the player answers it.
        for beat, target in (("arrival", "stairs"), ("stairs", "causeway")):
            await player.read_until(lambda p, beat=beat: (c := p.offered()) and c["beat"] == beat, seconds=30)
            await player.send("choice", index=await asyncio.to_thread(choice_leading_to, session, beat, target))
        await player.read_until(
            lambda p: any(m["type"] == "narration" and hook["presentation"] in m["text"] for m in p.messages),
            seconds=30,
        )
        await player.send("prompt", text="I hand over my lantern as a gift")
        await player.read_until_database(
            SessionEvent.objects.filter(session=session, kind="hook_outcome", applied_tick__isnull=False).exists,
            seconds=30,
        )

    asyncio.run(play(live_platform, session, cookie_for(creator), respond))
    outcome = SessionEvent.objects.get(session=session, kind="hook_outcome")
    assert outcome.payload["branch"] == "gift"
    assert HookBranch.objects.get(hook__world=version.world, name="gift").times_chosen == 1
