"""The pages in a real browser (Debian's Chromium through Playwright) against a real daphne."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from accounts.tests.factories import PASSWORD
from tests.fixtures import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]


RELATIVE_LUMINANCE = """
(color) => {
  const [r, g, b] = color.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number).map((channel) => {
    const c = channel / 255;
    return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
"""


def contrast(page: Page, selector: str) -> float:
    """WCAG contrast ratio of an element's text colour against the page background."""
    text = page.eval_on_selector(selector, "element => getComputedStyle(element).color")
    background = page.eval_on_selector("body", "element => getComputedStyle(element).backgroundColor")
    lighter, darker = sorted(
        (page.evaluate(RELATIVE_LUMINANCE, text), page.evaluate(RELATIVE_LUMINANCE, background)), reverse=True
    )
    return (lighter + 0.05) / (darker + 0.05)


def test_a_visitor_signs_up_confirms_their_e_mail_and_the_navigation_shows_their_account(
    page: Page, mail_folder: Path
) -> None:
    page.goto("/")
    page.get_by_role("link", name="Sign up").first.click()
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Email").fill("ada@example.com")
    page.get_by_label("Password:", exact=True).fill(PASSWORD)
    page.get_by_label("Password (again):").fill(PASSWORD)
    page.get_by_role("button", name="Sign Up").click()
    expect(page.get_by_role("heading", name="Verify Your Email Address")).to_be_visible()
    mail = wait_until(lambda: "".join(message.read_text() for message in mail_folder.glob("*.log")))
    page.goto(re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+/)", mail).group(1))
    page.get_by_role("button", name="Confirm").click()
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
