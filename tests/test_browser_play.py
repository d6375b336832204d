"""Playing in a real browser (Debian's Chromium through Playwright) against a real daphne and worker."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from stories.models import SessionEvent
from stories.tests.factories import PlaySessionFactory, WorldVersionFactory
from tests.fixtures import ROOT, LivePlatform, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def signed_in(page: Page, platform: LivePlatform, user: Any) -> None:
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": platform.url}])


def frame_number(page: Page) -> int:
    return int(page.locator("canvas").get_attribute("data-frame") or 0)


def test_a_player_watches_frames_moves_types_a_prompt_and_picks_a_choice(
    page: Page, live_platform: LivePlatform
) -> None:
    document = json.loads((ROOT / "worlds" / "demo_content" / "dark-lighthouse.json").read_text())
    version = WorldVersionFactory(document=document)
    session = PlaySessionFactory(version=version)
    signed_in(page, live_platform, session.owner)
    page.goto(f"/play/session/{session.pk}/")
    page.wait_for_function("Number(document.querySelector('canvas').dataset.frame || 0) > 3")
    expect(page.locator(".player-status")).to_contain_text("fps")
    before = page.locator("canvas").evaluate("canvas => canvas.toDataURL()")
    page.locator("canvas").click()
    page.keyboard.down("KeyW")
    page.wait_for_timeout(600)
    page.keyboard.up("KeyW")
    page.wait_for_function(f"Number(document.querySelector('canvas').dataset.frame) > {frame_number(page) + 3}")
    assert page.locator("canvas").evaluate("canvas => canvas.toDataURL()") != before
    page.get_by_label("Change the world").fill("make it night")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".player-log")).to_contain_text("The world changes.")
    choices = page.get_by_role("group", name="Choices")
    expect(choices.get_by_role("button")).to_have_count(2)
    choices.get_by_role("button", name="Ask Eve what happened").click()
    expect(page.locator(".player-log")).to_contain_text("Eve tells you about the storm")
    kinds = list(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert kinds[:2] == ["key_down", "key_up"]
    assert kinds[-2:] == ["prompt", "choice"]


def test_an_on_screen_button_moves_the_player_like_the_key(page: Page, live_platform: LivePlatform) -> None:
    session = PlaySessionFactory(version=WorldVersionFactory())
    signed_in(page, live_platform, session.owner)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/play/session/{session.pk}/")
    page.wait_for_function("Number(document.querySelector('canvas').dataset.frame || 0) > 2")
    button = page.get_by_role("button", name="Forward")
    button.dispatch_event("pointerdown")
    page.wait_for_timeout(400)
    button.dispatch_event("pointerup")
    expect(page.locator(".player-status")).not_to_contain_text("reconnecting")
    wait_until(lambda: SessionEvent.objects.filter(session=session).count() == 2)
    events = list(SessionEvent.objects.filter(session=session).order_by("sequence").values_list("payload", flat=True))
    assert events == [{"type": "key_down", "key": "KeyW"}, {"type": "key_up", "key": "KeyW"}]
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
