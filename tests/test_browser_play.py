"""Playing in a real browser (Debian's Chromium through Playwright) against a real daphne and worker."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from accounts.demo import demo_people_ensure
from accounts.models import User
from accounts.tests.factories import UserFactory
from gallery.models import Listing
from play.models import NarrationLine, PlaySession, SessionEvent
from play.selectors import LOG_LINES_SHOWN
from play.tests.factories import PlaySessionFactory, WorldVersionFactory
from shell.demo import demo_worlds_ensure
from tests.fixtures import ROOT, LivePlatform, wait_until
from worlds.models import ReviewStatus
from worlds.services import slug_unique, world_from_document, world_publish

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def page_signed_in(page: Page, platform: LivePlatform, user: Any) -> None:
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": platform.url}])


# wait_for_function would evaluate its predicate as a string, which the page's CSP (no 'unsafe-eval') refuses.
def frame_number(page: Page) -> int:
    return int(page.locator("canvas").get_attribute("data-frame") or 0)


# Every text the status line shows, however briefly (a reply from the small test model can take a tenth of a
# second): recorded in the page, read at the end.
RECORD_STATES = """() => {
  window.statesSeen = [document.querySelector(".player-state").textContent];
  new MutationObserver(() => window.statesSeen.push(document.querySelector(".player-state").textContent))
    .observe(document.querySelector(".player-state"), { childList: true, characterData: true, subtree: true });
}"""


def states_seen(page: Page) -> list[str]:
    return page.evaluate("window.statesSeen")


def no_sideways_scroll(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def inside(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (
        inner["x"] >= outer["x"] - 1
        and inner["y"] >= outer["y"] - 1
        and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + 1
        and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + 1
    )


def test_a_player_watches_frames_moves_types_a_prompt_and_picks_a_choice(
    page: Page, live_platform: LivePlatform
) -> None:
    document = json.loads((ROOT / "worlds" / "demo_content" / "dark-lighthouse.json").read_text())
    document["world"]["engine"] = "raycaster"  # as the factory's session: fast and exact frames in a browser test
    version = WorldVersionFactory(document=document)
    session = PlaySessionFactory(version=version)
    page_signed_in(page, live_platform, session.owner)
    page.goto(f"/play/session/{session.pk}/")
    wait_until(lambda: frame_number(page) > 3)
    expect(page.locator(".player-status")).to_contain_text("fps")
    before = page.locator("canvas").evaluate("canvas => canvas.toDataURL()")
    page.locator("canvas").click()
    page.keyboard.down("KeyW")
    # W is held until the picture changes: a key pressed and released before the same tick would move nothing,
    # and on a loaded machine a fixed hold can be that short for the worker.
    wait_until(lambda: page.locator("canvas").evaluate("canvas => canvas.toDataURL()") != before)
    page.keyboard.up("KeyW")
    assert SessionEvent.objects.filter(session=session, kind="key_down", payload__key="KeyW").exists()
    page.get_by_label("Change the world").fill("make it night")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".player-log")).to_contain_text("Night falls.")
    choices = page.get_by_role("group", name="Choices")
    expect(choices.get_by_role("button")).to_have_count(2)
    # The choices are written live (and may be the authored ones): the log says where each one leads.
    offer = SessionEvent.objects.get(session=session, kind="offer", payload__beat="arrival").payload
    to_eve = next(index for index, choice in enumerate(offer["choices"]) if choice["to"] == "ask-eve")
    page.evaluate(RECORD_STATES)
    choices.get_by_role("button", name=offer["choices"][to_eve]["text"]).click()
    expect(page.locator(".player-log")).to_contain_text("Eve tells you about the storm")
    # After a choice the status line says the story is writing the next ones, until they are there.
    expect(page.locator(".player-state")).to_have_text("Choose what happens next", timeout=30_000)
    assert "The story is thinking…" in states_seen(page)
    kinds = list(SessionEvent.objects.filter(session=session, player=session.owner).values_list("kind", flat=True))
    assert kinds[:2] == ["key_down", "key_up"]
    assert kinds[-2:] == ["prompt", "choice"]
    # A reload still shows the story so far, as the page told it.
    page.reload()
    expect(page.locator(".player-log")).to_contain_text("Night falls.")
    expect(page.locator(".player-log")).to_contain_text("Eve tells you about the storm")
    # The worker tells the reloaded page where the story stands: the scene it shows already, not twice.
    expect(page.locator(".player-state")).to_have_text("Choose what happens next", timeout=30_000)
    expect(page.locator(".player-log li", has_text="Eve tells you about the storm")).to_have_count(1)
    # Nor when more was said after it: the scene told again is not added to the log.
    page.get_by_label("Change the world").fill("let it snow")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".player-log li").last).to_have_text("Snow begins to fall.")
    page.reload()
    expect(page.locator(".player-state")).to_have_text("Choose what happens next", timeout=30_000)
    wait_until(lambda: frame_number(page) > 0)
    expect(page.locator(".player-log li").last).to_have_text("Snow begins to fall.")
    expect(page.locator(".player-log li", has_text="Eve tells you about the storm")).to_have_count(1)
    # Nor when the scene is older than the lines a page is served: it is not logged below the newer ones.
    NarrationLine.objects.bulk_create(
        NarrationLine(session=session, text=f"The gulls wheel overhead ({number}).")
        for number in range(1, LOG_LINES_SHOWN + 1)
    )
    page.reload()
    expect(page.locator(".player-state")).to_have_text("Choose what happens next", timeout=30_000)
    wait_until(lambda: frame_number(page) > 0)
    expect(page.locator(".player-log li").last).to_have_text(f"The gulls wheel overhead ({LOG_LINES_SHOWN}).")
    expect(page.locator(".player-log li", has_text="Eve tells you about the storm")).to_have_count(0)
    # Over the picture too, the story stands at its latest line, not at the scene told again.
    expect(page.locator(".player-subtitle")).to_have_text(f"The gulls wheel overhead ({LOG_LINES_SHOWN}).")


def test_an_on_screen_button_moves_the_player_like_the_key(page: Page, live_platform: LivePlatform) -> None:
    session = PlaySessionFactory(version=WorldVersionFactory())
    page_signed_in(page, live_platform, session.owner)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/play/session/{session.pk}/")
    wait_until(lambda: frame_number(page) > 2)
    button = page.get_by_role("button", name="Forward")
    button.dispatch_event("pointerdown")
    page.wait_for_timeout(400)
    button.dispatch_event("pointerup")
    expect(page.locator(".player-status")).not_to_contain_text(re.compile("reconnecting", re.IGNORECASE))
    pressed = SessionEvent.objects.filter(session=session, player=session.owner).order_by("sequence")
    wait_until(lambda: pressed.count() == 2)
    events = list(pressed.values_list("payload", flat=True))
    assert events == [{"type": "key_down", "key": "KeyW"}, {"type": "key_up", "key": "KeyW"}]
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_a_character_published_alone_is_met_in_their_scene_and_their_creator_sees_the_prompt(
    page: Page, live_platform: LivePlatform
) -> None:
    creator = UserFactory()
    document = json.loads((ROOT / "worlds" / "demo_content" / "eve-keeper.json").read_text())
    world = world_from_document(document, owner=creator, slug=slug_unique(document["world"]["title"]))
    world_publish(world=world, by=creator)
    page_signed_in(page, live_platform, creator)
    page.goto(f"/play/{world.slug}/")
    page.get_by_role("button", name="Start a new session").click()
    wait_until(lambda: frame_number(page) > 3)
    expect(page.locator(".player-greeting")).to_contain_text(document["characters"][0]["greeting"])
    expect(page.locator(".player-state")).to_have_text("Playing")
    page.evaluate(RECORD_STATES)
    page.get_by_label("Say to Eve").fill("I found a <b>silver</b> key at the docks.")
    page.get_by_role("button", name="Say").click()
    expect(page.locator(".player-log")).to_contain_text("You: I found a <b>silver</b> key")  # text, not markup
    expect(page.locator(".player-log li").filter(has_text="Eve:")).to_have_count(1, timeout=60_000)
    expect(page.locator(".player-speaking")).to_have_count(0, timeout=60_000)  # the reply finished
    # From the moment what was said is accepted until the first line of the reply, the status says so.
    assert states_seen(page) == ["Playing", "Eve is thinking…", "Playing"]
    session = PlaySession.objects.get(version__world=world)
    spoken = SessionEvent.objects.get(session=session, kind="speech")
    assert spoken.applied_effects["events"] == [{"kind": "approach", "name": "Eve"}]
    page.locator(".player-debug summary").click()
    expect(page.locator(".player-debug")).to_contain_text("Prompt for Eve")


def test_a_phone_never_scrolls_sideways_and_the_keys_move_the_picture_without_a_click_on_it(
    page: Page, live_platform: LivePlatform
) -> None:
    demo_people_ensure()
    demo_worlds_ensure(creator=User.objects.get(username="demo-creator"))
    # A long word in a card (a URL in a logline) once widened the home page of a phone.
    Listing.objects.filter(slug="frost-ruins").update(logline="See https://example.com/" + "frost" * 12)
    lighthouse = Listing.objects.get(slug="the-dark-lighthouse").world.versions.get(status=ReviewStatus.APPROVED)
    session = PlaySessionFactory(version=lighthouse)  # a world with characters: the Talk-to form is on the page
    page_signed_in(page, live_platform, session.owner)
    page.set_viewport_size({"width": 360, "height": 740})
    page.goto("/")
    expect(page.get_by_role("heading", name="Worlds")).to_be_visible()
    assert no_sideways_scroll(page), "home"
    page.goto(f"/play/session/{session.pk}/")
    wait_until(lambda: frame_number(page) > 3)
    assert no_sideways_scroll(page), "player"
    # The status line says what the page is waiting for, over the picture, and the choices come over its bottom.
    expect(page.locator(".player-state")).to_have_text(
        re.compile("The story is thinking…|Choose what happens next|Playing")
    )
    choices = page.get_by_role("group", name="Choices").get_by_role("button")
    expect(choices).to_have_count(2, timeout=30_000)
    picture = page.locator("canvas").bounding_box()
    assert inside(choices.first.bounding_box(), picture) and inside(choices.last.bounding_box(), picture)
    expect(page.locator(".player-state")).to_have_text("Choose what happens next")
    # Nothing clicked, nothing focused: the keys reach the world as soon as the page is there.
    before = page.locator("canvas").evaluate("canvas => canvas.toDataURL()")
    page.keyboard.down("KeyW")
    wait_until(lambda: page.locator("canvas").evaluate("canvas => canvas.toDataURL()") != before)
    page.keyboard.up("KeyW")
    assert SessionEvent.objects.filter(session=session, kind="key_down", payload__key="KeyW").exists()
    # While typing the keys type; Esc gives them back to the world.
    field = page.get_by_label("Change the world")
    field.fill("")
    field.press("KeyW")
    expect(field).to_have_value("w")
    field.press("Escape")
    expect(field).not_to_be_focused()
    # On a wide screen the controls stand beside the picture, not under it.
    page.set_viewport_size({"width": 1280, "height": 900})
    picture = page.locator("canvas").bounding_box()
    prompt = page.get_by_label("Change the world").bounding_box()
    assert prompt["x"] >= picture["x"] + picture["width"] and prompt["y"] < picture["y"] + picture["height"]
    assert picture["y"] + picture["height"] <= 900, "the whole picture fits in the window"
    assert no_sideways_scroll(page), "wide player"
