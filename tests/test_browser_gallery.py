"""Publishing, review and the gallery in a real browser (Debian's Chromium) against a real daphne, with three
people: a creator publishes, a moderator approves, a player finds the world and reports it, the moderator
takes it down."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from allauth.mfa.models import Authenticator
from playwright.sync_api import Browser, Page, expect

from accounts.models import User
from accounts.tests.factories import PASSWORD, ModeratorFactory, UserFactory, totp_code
from tests.fixtures import LivePlatform, platform_environment, start_platform
from worlds.tests.factories import CharacterFactory, WorldFactory

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def gallery_platform(transactional_db: None) -> Iterator[LivePlatform]:
    """The platform with Celery tasks run inline: the checks need no worker process, even where Redis is set."""
    platform = start_platform(environment=platform_environment(CELERY_BROKER_URL=""))
    yield platform
    platform.stop()


def tab(browser: Browser, platform: LivePlatform, user: User) -> Page:
    """A browser tab of its own (its own cookies) signed in as `user`."""
    page = browser.new_context(base_url=platform.url).new_page()
    page.goto("/accounts/login/")
    page.get_by_label("Login").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign In").click()
    if Authenticator.objects.filter(user=user).exists():  # moderators have an authenticator app
        page.get_by_placeholder("Code").fill(totp_code())
        page.get_by_role("button", name="Sign In").click()
    expect(page.get_by_role("navigation", name="Main")).to_contain_text(f"Signed in as {user.username}")
    return page


def test_a_world_goes_from_the_studio_through_review_into_the_gallery_and_out_again_after_a_report(
    browser: Any, gallery_platform: LivePlatform
) -> None:
    creator, moderator, player = UserFactory(), ModeratorFactory(), UserFactory()
    world = WorldFactory(owner=creator, title="Foghaven", category="stories", logline="A harbour that remembers.")
    world.characters.add(CharacterFactory(owner=creator, name="Eve", greeting="You came in with the fog."))

    studio = tab(browser, gallery_platform, creator)
    studio.goto(f"/studio/worlds/{world.pk}/")
    studio.get_by_role("button", name="Publish").click()
    studio.goto("/moderation/submissions/")
    expect(studio.get_by_role("table")).to_contain_text("Waiting for review")

    review = tab(browser, gallery_platform, moderator)
    review.goto("/moderation/")
    review.get_by_label("Category").select_option("stories")
    review.get_by_role("button", name="Filter").click()
    expect(review.get_by_role("row", name=re.compile("Foghaven v1"))).to_contain_text("Pass")
    review.get_by_role("link", name="Foghaven v1").click()
    expect(review.get_by_role("heading", name="Automated checks")).to_be_visible()
    expect(review.locator(".check-list")).to_contain_text("Eve: “You came in with the fog.”")
    expect(review.get_by_role("img", name="The first frame the engine drew")).to_be_visible()
    review.get_by_role("button", name="Approve").click()
    expect(review.locator(".messages")).to_contain_text("Approved Foghaven v1")

    play = tab(browser, gallery_platform, player)
    play.goto("/gallery/stories/")
    play.get_by_role("link", name="Foghaven").click()
    expect(play.get_by_role("heading", name="Foghaven", level=1)).to_be_visible()
    expect(play.get_by_role("img", name=re.compile("first view of Foghaven"))).to_be_visible()
    play.get_by_role("button", name="Like").click()
    expect(play.locator("[data-count=likes]")).to_have_text("1 like")
    play.get_by_role("link", name="Report").click()
    play.get_by_label("What are you reporting?").select_option("character")
    play.get_by_label("Which character").fill("Eve")
    play.get_by_label("Reason").select_option("harassment")
    play.get_by_label("Anything moderators should know").fill("Eve mocks new players.")
    play.get_by_role("button", name="Send the report").click()
    expect(play.locator(".messages")).to_contain_text("your report is with the moderators")

    review.goto("/moderation/?kind=report")
    review.get_by_role("link", name="Foghaven v1").click()
    expect(review.locator(".report-card")).to_contain_text("Eve mocks new players.")
    review.get_by_label("Why it is taken down").fill("Harasses new players.")
    review.get_by_role("button", name="Take the world down").click()
    expect(review.locator(".messages")).to_contain_text("Taken down")

    play.goto("/gallery/stories/")
    expect(play.get_by_role("link", name="Foghaven")).to_have_count(0)
    assert play.goto(f"/worlds/{world.slug}/").status == 404
    studio.goto("/moderation/submissions/")
    expect(studio.locator(".decision-list")).to_contain_text("Harasses new players.")
    expect(studio.get_by_role("button", name="Appeal (once)")).to_be_visible()
