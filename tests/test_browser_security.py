"""Markup from workers, models and creators stays inert in a real browser (Debian's Chromium) under the CSP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from accounts.tests.factories import ModeratorFactory, UserFactory
from moderation.services import version_approve
from moderation.tests.fixtures import tasks_run_inline
from play.tests.factories import PlaySessionFactory, WorldVersionFactory
from tests.fixtures import ROOT, LivePlatform, wait_until
from worlds.services import world_publish
from worlds.tests.factories import CharacterFactory, WorldFactory

__all__ = ["tasks_run_inline"]  # publishing below runs the moderation checks in this process

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Were it ever parsed as HTML, the image's handler and the script would each set the flag (or, refused by the
# CSP, report a violation); shown as text, neither happens.
MARKUP = '<img src=x onerror="window.injected = true"><script>window.injected = true; alert(1)</script>'

WATCH_FOR_SCRIPT = """
window.violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.violations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


@pytest.fixture
def watched(page: Page) -> Iterator[Page]:
    """A tab that records CSP violations, dialogs and console complaints about the policy; none may happen."""
    dialogs: list[str] = []
    refused: list[str] = []
    page.add_init_script(WATCH_FOR_SCRIPT)
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else 0)
    yield page
    assert dialogs == []
    assert refused == []


def nothing_ran(page: Page) -> None:
    assert page.evaluate("window.injected") is None
    assert page.evaluate("window.violations") == []


def page_signed_in(page: Page, platform: LivePlatform, user: Any) -> None:
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": platform.url}])


def test_markup_in_a_storys_narration_reaches_the_player_as_text(watched: Page, live_platform: LivePlatform) -> None:
    document = json.loads((ROOT / "worlds" / "demo_content" / "dark-lighthouse.json").read_text())
    document["world"]["engine"] = "raycaster"  # as the factory's session: frames fast on a busy machine
    story = document["stories"][0]
    story["beats"][0]["scene"] = f"You step onto the jetty. {MARKUP}"
    session = PlaySessionFactory(version=WorldVersionFactory(document=document))
    page_signed_in(watched, live_platform, session.owner)
    watched.goto(f"/play/session/{session.pk}/")
    # Frames drawn (blob: images) over the page's own WebSocket (connect-src 'self'): the policy lets play work.
    wait_until(lambda: int(watched.locator("canvas").get_attribute("data-frame") or 0) > 3)
    expect(watched.locator(".player-log")).to_contain_text(f"You step onto the jetty. {MARKUP}")
    expect(watched.locator(".player-log img, .player-log script")).to_have_count(0)
    nothing_ran(watched)


def test_markup_in_creator_text_shows_as_text_on_gallery_and_studio_pages(
    watched: Page, live_platform: LivePlatform
) -> None:
    creator = UserFactory()
    world = WorldFactory(owner=creator, title=f"Harbour {MARKUP}", logline=MARKUP, description=f"About {MARKUP}")
    world.characters.add(CharacterFactory(owner=creator, name="Eve", greeting=MARKUP))
    version_approve(version=world_publish(world=world, by=creator), moderator=ModeratorFactory())

    watched.goto(f"/worlds/{world.slug}/")
    expect(watched.get_by_role("heading", level=1)).to_have_text(f"Harbour {MARKUP}")
    expect(watched.locator("main")).to_contain_text(f"About {MARKUP}")
    nothing_ran(watched)
    watched.goto("/")
    expect(watched.locator("main")).to_contain_text(f"Harbour {MARKUP}")
    nothing_ran(watched)
    watched.goto(f"/creators/{creator.username}/")
    expect(watched.locator("main")).to_contain_text(f"Harbour {MARKUP}")
    nothing_ran(watched)

    page_signed_in(watched, live_platform, creator)
    watched.goto(f"/studio/worlds/{world.pk}/")
    expect(watched.get_by_label("Title")).to_have_value(f"Harbour {MARKUP}")
    nothing_ran(watched)
    watched.goto(f"/studio/characters/{world.characters.get().pk}/")
    expect(watched.locator("#id_greeting")).to_have_value(MARKUP)
    nothing_ran(watched)
    expect(watched.locator("main img, main script")).to_have_count(0)


def test_the_api_docs_and_the_authenticator_setup_work_under_the_policy(
    watched: Page, live_platform: LivePlatform
) -> None:
    watched.goto("/api/docs/")
    expect(watched.locator(".swagger-ui .title")).to_contain_text("Worldloom API")
    expect(watched.locator(".opblock").first).to_be_visible()
    nothing_ran(watched)
    page_signed_in(watched, live_platform, ModeratorFactory(second_factor=False))
    watched.goto("/moderation/")
    # allauth asks for the password again before an authenticator is added.
    expect(watched).to_have_url(
        f"{live_platform.url}/accounts/reauthenticate/?next=%2Faccounts%2F2fa%2Ftotp%2Factivate%2F"
    )
    nothing_ran(watched)
