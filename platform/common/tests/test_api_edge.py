"""The API's edge: any body, however hostile, is answered with a 4xx that names its fault, never a 5xx."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.exceptions import ParseError

from accounts.tests.factories import ModeratorFactory, UserFactory
from common.parsers import MAX_JSON_DEPTH, BoundedJSONParser

TOO_DEEP = f"nested deeper than {MAX_JSON_DEPTH} levels"
WRITES = ("post", "put", "patch")


def nested(depth: int, *, objects: bool) -> str:
    opening, closing = ('{"a":', "}") if objects else ("[", "]")
    return opening * depth + "1" + closing * depth


def api_writes() -> list[tuple[str, str]]:
    """Every (method, path) of the OpenAPI schema that takes a body, path parameters filled in."""
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    return [
        (method, re.sub(r"\{[^}]+\}", "1", path))
        for path, operations in paths.items()
        for method in operations
        if method in WRITES
    ]


@pytest.fixture
def throttles_forgotten() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.mark.django_db
@pytest.mark.parametrize("objects", [False, True], ids=["arrays", "objects"])
def test_a_body_nested_ten_thousand_deep_is_a_400_naming_the_depth_at_every_api_endpoint(
    objects: bool, throttles_forgotten: None
) -> None:
    body = nested(10_000, objects=objects)
    callers = {"anonymous": Client(), "creator": Client(), "moderator": Client()}
    callers["creator"].force_login(UserFactory())
    callers["moderator"].force_login(ModeratorFactory())
    writes = api_writes()
    assert len(writes) > 20, writes  # the schema really was read
    named_the_depth = set()
    for who, client in callers.items():
        for method, path in writes:
            cache.clear()  # the token endpoint's throttle would answer 429 before the body is read
            response = getattr(client, method)(path, body, content_type="application/json")
            assert response.status_code < 500, (who, method, path, response.status_code)
            if response.status_code == 400:
                assert TOO_DEEP in json.dumps(response.json()), (who, method, path, response.json())
                named_the_depth.add((who, method, path))
    # Not vacuous: the log-in for a token (anonymous), and a creator's writes, did read the body.
    assert ("anonymous", "post", "/api/accounts/token/") in named_the_depth
    assert ("creator", "post", "/api/worlds/") in named_the_depth
    assert ("creator", "put", "/api/gallery/settings/") in named_the_depth


@pytest.mark.django_db
def test_a_json_body_over_the_upload_limit_is_a_413_naming_the_limit(throttles_forgotten: None, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
    body = json.dumps({"username": "x" * (1024 * 1024), "password": "y"})
    response = Client().post("/api/accounts/token/", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {"detail": "the request body is over the limit of 1048576 bytes"}


def parsed(text: str) -> Any:
    return BoundedJSONParser().parse(io.BytesIO(text.encode()), "application/json", {})


@given(depth=st.integers(min_value=1, max_value=20_000), objects=st.booleans())
def test_the_parser_takes_json_up_to_the_depth_limit_and_refuses_deeper_naming_it(depth: int, objects: bool) -> None:
    text = nested(depth, objects=objects)
    if depth <= MAX_JSON_DEPTH:
        assert parsed(text) == json.loads(text)
    else:
        with pytest.raises(ParseError, match=TOO_DEEP):
            parsed(text)


@given(st.text(max_size=200))
def test_the_parser_answers_any_text_with_a_value_or_a_parse_error(text: str) -> None:
    try:
        parsed(text)
    except ParseError:
        pass
