from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from worlds.categories import Category

pytestmark = pytest.mark.django_db


def test_the_home_page_links_every_category(client: Client) -> None:
    page = client.get(reverse("gallery:home")).content.decode()
    for category in Category:
        assert f'href="{reverse("gallery:category", args=[category.value])}"' in page


@pytest.mark.parametrize("category", Category.values)
def test_each_category_page_uses_the_site_layout(client: Client, category: str) -> None:
    response = client.get(reverse("gallery:category", args=[category]))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'aria-label="Main"' in page
    assert "/static/css/worldloom." in page


def test_an_unknown_category_is_not_found(client: Client) -> None:
    assert client.get("/gallery/cartoons/").status_code == 404


def test_the_sign_up_and_log_in_pages_use_the_site_layout(client: Client) -> None:
    for name in ("account_signup", "account_login"):
        page = client.get(reverse(name)).content.decode()
        assert 'aria-label="Main"' in page
        assert "<label" in page


def test_the_api_schema_is_openapi_3(client: Client) -> None:
    response = client.get(reverse("api-schema"), HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert "/api/accounts/me/" in schema["paths"]


def test_the_api_docs_are_served_without_a_cdn(client: Client) -> None:
    page = client.get(reverse("api-docs")).content.decode()
    assert "swagger-ui" in page
    assert "cdn.jsdelivr" not in page
