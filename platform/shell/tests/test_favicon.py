"""The site's icon: every page links it, and /favicon.ico, which browsers ask for anyway, leads to it."""

from __future__ import annotations

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.test import Client

pytestmark = pytest.mark.django_db


def test_favicon_ico_leads_to_the_icon_every_page_links(client: Client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == static("favicon.svg")
    assert finders.find("favicon.svg") is not None
    page = client.get("/").content.decode()
    assert f'<link rel="icon" href="{static("favicon.svg")}" type="image/svg+xml">' in page


def test_the_icon_is_served_where_favicon_ico_sends_a_browser(client: Client) -> None:
    icon = client.get("/favicon.ico", follow=True)
    content = b"".join(icon.streaming_content) if icon.streaming else icon.content
    assert icon.status_code == 200 and content.startswith(b"<svg")
