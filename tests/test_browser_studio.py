"""The studio in a real browser (Debian's Chromium through Playwright) against a real daphne."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from accounts.models import User
from accounts.tests.factories import PASSWORD, UserFactory
from worlds.models import World, WorldVersion
from worlds.tests.factories import HookBranchFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parent / "data" / "formats"


def log_in(page: Page, user: User) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Login").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign In").click()
    expect(page.get_by_role("navigation", name="Main")).to_contain_text(f"Signed in as {user.username}")


def saved(page: Page) -> None:
    expect(page.locator(".messages")).to_contain_text("Saved")


def test_a_creator_builds_a_world_with_a_character_lore_and_a_two_branch_hook_then_publishes(page: Page) -> None:
    creator = UserFactory()
    log_in(page, creator)

    page.goto("/studio/")
    page.get_by_role("link", name="New lorebook").click()
    page.get_by_role("group", name="Lorebook").get_by_label("Name").fill("Harbour lore")
    entry = page.get_by_role("group", name="Lore entry 1")
    entry.get_by_label("Keys:", exact=True).fill("lighthouse, lamp")
    entry.get_by_label("Content").fill("The lighthouse has been dark since the storm.")
    page.get_by_role("button", name="Create lorebook").click()
    saved(page)

    page.get_by_role("link", name="Studio").first.click()
    page.get_by_role("link", name="New character").click()
    page.get_by_role("group", name="Who they are").get_by_label("Name").fill("Eve")
    page.get_by_label("Persona:", exact=True).fill("The lighthouse keeper, patient and watchful.")
    page.get_by_label("Greeting:", exact=True).fill("You came in with the fog.")
    page.get_by_label("Lorebook").select_option(label="Harbour lore")
    clue = page.get_by_role("group", name="Clue 1")
    clue.get_by_label("Name").fill("the-key")
    clue.get_by_label("Text").fill("The key to the lamp room hangs under the stairs.")
    clue.get_by_label("Revealed when").select_option("keyword")
    clue.get_by_label("Beat, flag or keyword").fill("key")
    page.get_by_role("button", name="Create character").click()
    saved(page)

    page.goto("/studio/worlds/new/")
    page.get_by_role("button", name="Create world").click()
    summary = page.locator("[data-error-summary]")
    expect(summary).to_be_focused()
    summary.get_by_role("link", name="Title: This field is required.").click()
    expect(page.get_by_label("Title")).to_be_focused()
    page.get_by_label("Title").fill("The drowned harbour")
    page.get_by_label("Logline").fill("A harbour under fog where the lighthouse has gone dark.")
    page.get_by_label("Tags").fill("harbour, mystery")
    page.get_by_role("group", name="Characters").get_by_label("Eve").check()
    page.get_by_role("group", name="Lorebooks").get_by_label("Harbour lore").check()
    page.get_by_role("button", name="Create world").click()
    saved(page)

    preview = page.get_by_role("img", name="The first frame")
    page.get_by_label("Time of day").select_option("night")
    expect(preview).to_have_attribute("src", re.compile(r"^blob:"))
    page.get_by_label("Size").fill("3")
    expect(page.locator("[data-preview-message]")).to_contain_text("No preview: size must be an integer 8..64")
    page.get_by_label("Size").fill("16")
    expect(page.locator("[data-preview-message]")).to_be_empty()

    page.get_by_role("link", name="New hook").click()
    page.get_by_role("group", name="Hook", exact=True).get_by_label("Name").fill("guardian")
    page.get_by_label("Fires when").select_option("keywords")
    expect(page.get_by_label("Area radius")).to_be_hidden()
    page.get_by_label("Keywords").fill("bridge")
    page.get_by_label("Presentation").fill("A stone guardian blocks the bridge and asks for a gift.")
    gift = page.get_by_role("group", name="Hook branch 1")
    gift.get_by_label("Name").fill("gift")
    gift.get_by_label("Intent").fill("the player offers a gift")
    gift.get_by_label("Example player inputs").fill("I give you my lantern\ntake this coin")
    gift.get_by_label("dawn").check()
    page.get_by_role("button", name="Add another hook branch").click()
    fight = page.get_by_role("group", name="Hook branch 2")
    expect(fight.get_by_label("Name")).to_be_focused()
    fight.get_by_label("Name").fill("fight")
    fight.get_by_label("Intent").fill("the player attacks the guardian")
    fight.get_by_label("Example player inputs").fill("I draw my sword")
    page.get_by_role("button", name="Create hook").click()
    saved(page)

    page.get_by_label("Sample player inputs").fill("TAKE THIS COIN\nI sing to it")
    page.get_by_role("button", name="Try").click()
    # The first playtest in the server process loads MiniLM.
    expect(page.locator(".playtest-results")).to_contain_text("branch gift", timeout=60_000)
    expect(page.locator(".playtest-results")).to_contain_text("no branch: the fallback would narrate")

    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name="The drowned harbour").click()
    page.get_by_role("button", name="Publish").click()
    expect(page.locator(".messages")).to_contain_text("Submitted version 1")

    world = World.objects.get(owner=creator)
    document = WorldVersion.objects.get(world=world).document
    assert [character["name"] for character in document["characters"]] == ["Eve"]
    assert document["characters"][0]["clues"][0]["name"] == "the-key"
    assert document["lorebooks"][0]["entries"][0]["keys"] == ["lighthouse", "lamp"]
    assert [branch["name"] for branch in document["hooks"][0]["branches"]] == ["gift", "fight"]
    assert document["hooks"][0]["branches"][0]["effects"] == {"world_events": [{"kind": "dawn"}]}


def too_wide(page: Page) -> list[str]:
    """The elements that stick out past the right edge of the screen, to name them when a page scrolls sideways."""
    return page.evaluate(
        """() => [...document.querySelectorAll("*")]
            .filter((element) => element.getBoundingClientRect().right > window.innerWidth)
            .map((element) => `${element.tagName}#${element.id}.${element.className}`)"""
    )


def test_studio_pages_need_no_sideways_scrolling_on_a_phone(page: Page) -> None:
    hook = HookBranchFactory().hook
    log_in(page, hook.world.owner)
    page.set_viewport_size({"width": 360, "height": 740})
    for path in (
        "/studio/",
        f"/studio/worlds/{hook.world.pk}/",
        f"/studio/hooks/{hook.pk}/?inputs=take+this+coin",
        "/studio/characters/new/",
        "/studio/lorebooks/new/",
        f"/studio/worlds/{hook.world.pk}/stories/new/",
    ):
        page.goto(path)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), (path, too_wide(page))


def test_a_creator_imports_a_card_png_and_exports_a_cartridge(page: Page, tmp_path: Path) -> None:
    creator = UserFactory()
    log_in(page, creator)
    page.goto("/studio/")
    page.get_by_role("link", name="Import a file").click()
    page.get_by_label("File").set_input_files(str(FIXTURES / "truncated_card.png"))
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("alert")).to_contain_text("truncated")
    page.get_by_label("File").set_input_files(str(FIXTURES / "eve_card_v3.png"))
    page.get_by_role("button", name="Import").click()
    expect(page.locator(".messages")).to_contain_text("Imported character “Eve”")
    page.goto("/studio/worlds/new/")
    page.get_by_label("Title").fill("Saltmarsh")
    page.get_by_label("Logline").fill("A marsh with a lighthouse.")
    page.get_by_role("checkbox", name="Eve").check()
    page.get_by_role("button", name="Create world").click()
    saved(page)
    with page.expect_download() as download:
        page.get_by_role("link", name="World cartridge (zip)").click()
    target = tmp_path / download.value.suggested_filename
    download.value.save_as(target)
    manifest = json.loads(zipfile.ZipFile(target).read("manifest.json"))
    document = json.loads(zipfile.ZipFile(target).read("world.json"))
    assert manifest["provenance"]["creator"] == creator.username
    assert [character["name"] for character in document["characters"]] == ["Eve"]
    assert any(name.startswith("assets/portraits/") for name in zipfile.ZipFile(target).namelist())
