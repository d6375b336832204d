"""Authorization fuzz of the JSON API: schemathesis generates requests from the OpenAPI schema, sent with one
person's token; aimed at another person's objects they get 401, 403 or 404, and nothing anywhere gets a 5xx."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, settings
from rest_framework.authtoken.models import Token

from accounts.models import User
from accounts.tests.factories import UserFactory
from play.tests.factories import WorldVersionFactory
from worlds.models import World
from worlds.tests.factories import CharacterFactory, HookFactory, LorebookFactory, StoryFactory, WorldFactory

# Fuzzing only, positive and negative data: the coverage phase adds every unexpected HTTP method (TRACE and
# the like, 405 before any object is looked up) to every operation, and it would triple the run.
FUZZING_ONLY = schemathesis.config.SchemathesisConfig.from_dict(
    {"phases": {"coverage": {"enabled": False}, "examples": {"enabled": False}, "stateful": {"enabled": False}}}
)
# The schema view reads no rows (serializers own nothing for an anonymous caller), so it loads at collection.
schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(), config=FUZZING_ONLY)

REFUSED = {401, 403, 404}
# Open to every signed-in person by design, whoever the other person is: their public profile, following them.
PUBLIC_BY_DESIGN = ("/api/gallery/creators/",)


@dataclass
class Others:
    """What the other person owns: a private world with its parts, and a version still waiting for review."""

    person: User
    world: World
    ids: dict[str, Any]


@pytest.fixture
def others(db: None) -> Others:
    person = UserFactory()
    world = WorldFactory(owner=person)
    version = WorldVersionFactory(world=world, status="pending")
    character, lorebook = CharacterFactory(owner=person), LorebookFactory(owner=person)
    hook, story = HookFactory(world=world), StoryFactory(world=world)
    ids = {
        "characters": character.pk,
        "lorebooks": lorebook.pk,
        "hooks": hook.pk,
        "stories": story.pk,
        "worlds": world.pk,
        "versions": version.pk,
        "user_id": person.pk,
        "version_id": version.pk,
        "world_id": world.pk,
    }
    return Others(person=person, world=world, ids=ids)


@pytest.fixture
def connection_kept_across_requests() -> Any:
    """As Django's test client does: the WSGI handler would otherwise close the connection holding the test's
    transaction at the end of every request."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def caller_token(db: None) -> str:
    """A signed-up person (player and creator, not a moderator) with an API token."""
    return Token.objects.create(user=UserFactory()).key


def aimed_at(path: str, generated: dict[str, Any], others: Others) -> dict[str, Any]:
    """The path parameters of `path` pointed at the other person's objects."""
    resource = path.split("/")[2]
    aimed = {}
    for name in generated:
        if name == "id":
            aimed[name] = others.ids.get(resource, others.world.pk)
        elif name == "slug":
            aimed[name] = others.world.slug
        elif name == "username":
            aimed[name] = others.person.username
        elif name == "kind":
            aimed[name] = "world"
        else:
            # Reports, appeals and queue items are a moderator's: any id is refused before it is looked up.
            aimed[name] = others.ids.get(name, others.world.pk)
    if resource == "exports":
        aimed["id"] = others.world.pk
    return aimed


@schema.parametrize()
@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    # The fixtures are the same ground for every example; each example's writes stay the caller's own.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@pytest.mark.usefixtures("connection_kept_across_requests")
def test_one_person_s_token_never_reaches_another_s_objects_and_nothing_fails_with_a_5xx(
    case: Any, others: Others, caller_token: str
) -> None:
    headers = {"Authorization": f"Token {caller_token}"}
    response = case.call(headers=headers)
    assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.status_code}"
    if not case.path_parameters or case.path.startswith(PUBLIC_BY_DESIGN):
        return
    case.path_parameters = aimed_at(case.path, case.path_parameters, others)
    response = case.call(headers=headers)
    assert response.status_code in REFUSED, f"{case.method} {case.formatted_path}: {response.status_code}"
    world = World.objects.get(pk=others.world.pk)
    assert (world.owner_id, world.title) == (others.person.pk, others.world.title)
