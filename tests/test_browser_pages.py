"""The pages in a real browser (Debian's Chromium through Playwright) against a real daphne."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from accounts.tests.factories import PASSWORD
from tests.fixtures import LivePlatform

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
# Chromium's background services try the network, which this machine closes; these flags keep it quiet.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

RELATIVE_LUMINANCE = """
(color) => {
  const [r, g, b] = color.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number).map((channel) => {
    const c = channel / 255;
    return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI_REQUIRE_SERVICES"):
            pytest.fail(f"CI needs Chromium at {CHROMIUM}")
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
    # Playwright's sync API keeps an event loop running on this thread between calls, so Django would refuse
    # the test's own database work; the documented remedy (Playwright's Django notes) is this switch.
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, live_platform: LivePlatform) -> Iterator[Page]:
    context = browser.new_context(base_url=live_platform.url)
    page = context.new_page()
    yield page
    context.close()


def contrast(page: Page, selector: str) -> float:
    """WCAG contrast ratio of an element's text colour against the page background."""
    text = page.eval_on_selector(selector, "element => getComputedStyle(element).color")
    background = page.eval_on_selector("body", "element => getComputedStyle(element).backgroundColor")
    lighter, darker = sorted(
        (page.evaluate(RELATIVE_LUMINANCE, text), page.evaluate(RELATIVE_LUMINANCE, background)), reverse=True
    )
    return (lighter + 0.05) / (darker + 0.05)


def test_a_visitor_signs_up_and_the_navigation_shows_their_account(page: Page) -> None:
    page.goto("/")
    page.get_by_role("link", name="Sign up").first.click()
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_label("Password:", exact=True).fill(PASSWORD)
    page.get_by_label("Password (again):").fill(PASSWORD)
    page.get_by_role("button", name="Sign Up").click()
    navigation = page.get_by_role("navigation", name="Main")
    expect(navigation).to_contain_text("Signed in as ada")
    expect(navigation.get_by_role("link", name="Studio")).to_be_visible()
    expect(navigation.get_by_role("link", name="Moderation")).to_have_count(0)
    navigation.get_by_role("button", name="Log out").click()
    expect(navigation.get_by_role("link", name="Log in")).to_be_visible()


def test_the_keyboard_reaches_a_visible_skip_link_with_a_focus_ring(page: Page) -> None:
    page.goto("/")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    assert page.eval_on_selector(".skip-link", "element => element.getBoundingClientRect().left") >= 0
    assert page.eval_on_selector(".skip-link", "element => getComputedStyle(element).outlineStyle") == "solid"


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_is_readable_in_light_and_dark(page: Page, scheme: str) -> None:
    page.emulate_media(color_scheme=scheme)
    page.goto("/")
    for selector in ("h1", ".lead, .hero p", ".nav-links a", ".site-footer p"):
        assert contrast(page, selector) >= 4.5, selector
    background = page.eval_on_selector("body", "element => getComputedStyle(element).backgroundColor")
    luminance = page.evaluate(RELATIVE_LUMINANCE, background)
    assert (luminance < 0.1) if scheme == "dark" else (luminance > 0.8)


def test_a_phone_sized_screen_needs_no_sideways_scrolling(page: Page) -> None:
    page.set_viewport_size({"width": 360, "height": 740})
    for path in ("/", "/gallery/games/", "/accounts/login/"):
        page.goto(path)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
