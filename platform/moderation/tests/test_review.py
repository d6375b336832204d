"""Publishing to the gallery: automated checks, the queue, approval and rejection, newer versions, idempotent tasks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import User
from accounts.tests.factories import UserFactory
from gallery.models import Listing
from moderation.models import CheckKind, CheckResult, QueueItem, Verdict
from moderation.services import version_approve, version_reject
from moderation.tasks import version_check_task
from tests.fixtures import SignIn
from worlds.models import ReviewStatus, WorldVersion
from worlds.services import world_update
from worlds.tests.factories import CharacterFactory, WorldFactory

pytestmark = pytest.mark.django_db


def test_a_published_world_is_checked_queued_approved_and_then_shown_in_its_category(
    signed_in: SignIn, publish: Callable[..., WorldVersion], moderator: User, django_capture_on_commit_callbacks: Any
) -> None:
    world = WorldFactory(title="Foghaven", category="stories", logline="A harbour that remembers every ship.")
    world.characters.add(CharacterFactory(owner=world.owner, greeting="{{user}}, you came in with the fog."))
    category_url = reverse("gallery:category", args=["stories"])

    version = publish(world)

    assert version.status == ReviewStatus.PENDING
    checks = {check.kind: check for check in version.checks.all()}
    assert set(checks) == set(CheckKind)
    assert all(check.verdict == Verdict.PASS and check.reason for check in checks.values()), checks
    assert checks[CheckKind.PREVIEW].image.read(3) == b"\xff\xd8\xff"  # a JPEG frame from the engine
    assert checks[CheckKind.PREVIEW].details == {"character": "Eve", "greeting": "you, you came in with the fog."}
    assert "Foghaven" not in Client().get(category_url).content.decode()
    assert Client().get(reverse("gallery:world", args=[world.slug])).status_code == 404

    moderators = signed_in(moderator)
    item = QueueItem.objects.get(version=version)
    assert item.automated_verdict == Verdict.PASS
    queue = moderators.get(reverse("moderation:queue"), {"category": "stories", "verdict": "pass"}).content.decode()
    assert reverse("moderation:item", args=[item.pk]) in queue
    page = moderators.get(reverse("moderation:item", args=[item.pk])).content.decode()
    assert "A harbour that remembers every ship." in page and "Generated preview" in page
    with django_capture_on_commit_callbacks(execute=True):  # as the approval's commit would run them
        moderators.post(reverse("moderation:version_decide", args=[version.pk, "approve"]), {"reason": ""})

    version.refresh_from_db()
    assert (version.status, version.reviewed_by) == (ReviewStatus.APPROVED, moderator)
    assert "Foghaven" in Client().get(category_url).content.decode()
    assert Client().get(reverse("gallery:world", args=[world.slug])).status_code == 200
    queue = moderators.get(reverse("moderation:queue")).content.decode()
    assert reverse("moderation:item", args=[item.pk]) not in queue
    api = APIClient().get("/api/gallery/worlds/", {"category": "stories"}).json()
    assert [card["slug"] for card in api["results"]] == [world.slug]


def test_the_checks_flag_terms_above_the_rating_and_fail_blocked_ones(publish: Callable[..., WorldVersion]) -> None:
    world = WorldFactory(content_rating="everyone", description="A drunk sailor sings.")
    world.characters.add(CharacterFactory(owner=world.owner, persona="Says: kill yourself, often."))
    version = publish(world)
    checks = {check.kind: check for check in version.checks.all()}
    assert checks[CheckKind.TERMS].verdict == Verdict.FAIL
    assert "'kill yourself' in characters[0].persona" in checks[CheckKind.TERMS].reason
    assert checks[CheckKind.RATING].verdict == Verdict.FLAG
    assert "'drunk' in world.description" in checks[CheckKind.RATING].reason
    assert QueueItem.objects.get(version=version).automated_verdict == Verdict.FAIL


def test_the_term_filter_sees_through_swapped_characters_but_not_inside_words(
    publish: Callable[..., WorldVersion],
) -> None:
    flagged = publish(WorldFactory(content_rating="everyone", logline="A n4k3d blade in the g0re-soaked hall."))
    assert flagged.checks.get(kind=CheckKind.RATING).verdict == Verdict.FLAG
    clean = publish(WorldFactory(content_rating="everyone", logline="The gunwale creaks; a bloodhound sleeps."))
    assert clean.checks.get(kind=CheckKind.RATING).verdict == Verdict.PASS


def test_a_missing_image_fails_the_image_check(publish: Callable[..., WorldVersion]) -> None:
    world = WorldFactory()
    WorldFactory._meta.model.objects.filter(pk=world.pk).update(cover_image="covers/gone.png")
    world.refresh_from_db()
    check = publish(world).checks.get(kind=CheckKind.IMAGES)
    assert check.verdict == Verdict.FAIL
    assert "world.cover_image: the file is missing" in check.reason


def test_a_check_delivered_twice_records_one_result(publish: Callable[..., WorldVersion]) -> None:
    version = publish(WorldFactory())
    first = version.checks.get(kind=CheckKind.PREVIEW)
    assert version_check_task.delay(version.pk, "preview").get() == first.verdict
    assert CheckResult.objects.filter(version=version, kind=CheckKind.PREVIEW).count() == 1
    assert version.checks.get(kind=CheckKind.PREVIEW).pk == first.pk


def test_a_rejection_keeps_the_version_private_and_tells_the_creator_why(
    signed_in: SignIn, publish: Callable[..., WorldVersion], moderator: User
) -> None:
    world = WorldFactory(title="Foghaven")
    version = publish(world)
    with pytest.raises(ValidationError, match="say why"):
        version_reject(version=version, moderator=moderator, reason="  ")
    version_reject(version=version, moderator=moderator, reason="The cover shows a real person's face.")
    assert WorldVersion.objects.get(pk=version.pk).status == ReviewStatus.REJECTED
    assert not Listing.objects.filter(world=world).exists()
    page = signed_in(world.owner).get(reverse("moderation:submissions")).content.decode()
    assert "The cover shows a real person&#x27;s face." in page
    mine = APIClient()
    mine.force_authenticate(world.owner)
    [submission] = mine.get("/api/moderation/submissions/").json()
    assert (submission["status"], submission["reason"]) == ("rejected", "The cover shows a real person's face.")
    assert len(submission["checks"]) == len(CheckKind)


def test_a_newer_version_waits_for_review_while_the_approved_one_stays_live(
    publish: Callable[..., WorldVersion], moderator: User
) -> None:
    world = WorldFactory(title="Foghaven")
    version_approve(version=publish(world), moderator=moderator)
    world_update(world=world, title="Foghaven at night")
    second = publish(world)
    page = Client().get(reverse("gallery:world", args=[world.slug])).content.decode()
    assert "Foghaven" in page and "Foghaven at night" not in page
    assert [version["number"] for version in APIClient().get("/api/versions/").json()["results"]] == [1]
    version_approve(version=second, moderator=moderator)
    assert "Foghaven at night" in Client().get(reverse("gallery:world", args=[world.slug])).content.decode()


def test_a_moderator_cannot_approve_their_own_work(publish: Callable[..., WorldVersion], moderator: User) -> None:
    version = publish(WorldFactory(owner=moderator))
    with pytest.raises(PermissionDenied):
        version_approve(version=version, moderator=moderator)
    api = APIClient()
    api.force_authenticate(moderator)
    response = api.post(f"/api/moderation/versions/{version.pk}/review/", {"decision": "approve"}, format="json")
    assert response.status_code == 403
    assert WorldVersion.objects.get(pk=version.pk).status == ReviewStatus.PENDING


def test_a_creator_cannot_approve_anything(publish: Callable[..., WorldVersion]) -> None:
    version = publish(WorldFactory())
    with pytest.raises(PermissionDenied):
        version_approve(version=version, moderator=version.world.owner)


def test_a_player_cannot_reach_the_moderator_pages_or_api(
    signed_in: SignIn, publish: Callable[..., WorldVersion]
) -> None:
    version = publish(WorldFactory())
    player = UserFactory()
    item = QueueItem.objects.get(version=version)
    pages = signed_in(player)
    assert pages.get(reverse("moderation:queue")).status_code == 403
    assert pages.get(reverse("moderation:item", args=[item.pk])).status_code == 403
    assert pages.post(reverse("moderation:version_decide", args=[version.pk, "approve"])).status_code == 403
    assert pages.get(reverse("moderation:audit")).status_code == 403
    assert Client().get(reverse("moderation:queue")).status_code == 302  # to the log-in page
    api = APIClient()
    api.force_authenticate(player)
    assert api.get("/api/moderation/queue/").status_code == 403
    assert api.get(f"/api/moderation/queue/{item.pk}/").status_code == 403
    assert api.post(f"/api/moderation/versions/{version.pk}/review/", {"decision": "approve"}).status_code == 403
    assert api.post(f"/api/moderation/worlds/{version.world_id}/actions/", {"action": "take_down"}).status_code == 403
    assert api.get("/api/moderation/audit/").status_code == 403
    assert WorldVersion.objects.get(pk=version.pk).status == ReviewStatus.PENDING


def test_the_queue_is_oldest_first_and_filters_by_category_rating_and_verdict(
    publish: Callable[..., WorldVersion], moderator: User
) -> None:
    games = publish(WorldFactory(category="games", content_rating="teen"))
    stories = publish(WorldFactory(category="stories", logline="A bloody tale."))
    api = APIClient()
    api.force_authenticate(moderator)
    assert [item["version"] for item in api.get("/api/moderation/queue/").json()] == [games.pk, stories.pk]
    assert [item["version"] for item in api.get("/api/moderation/queue/?category=stories").json()] == [stories.pk]
    assert [item["version"] for item in api.get("/api/moderation/queue/?rating=teen").json()] == [games.pk]
    assert [item["version"] for item in api.get("/api/moderation/queue/?verdict=flag").json()] == [stories.pk]
    detail = api.get(f"/api/moderation/queue/{QueueItem.objects.get(version=stories).pk}/").json()
    assert detail["document"]["world"]["logline"] == "A bloody tale."
    assert {check["kind"]: check["verdict"] for check in detail["checks"]}["rating"] == "flag"
