"""An item's page offers only the actions that apply to its world now; the services refuse the others."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.urls import reverse

from accounts.models import User
from accounts.tests.factories import UserFactory
from gallery.models import Listing
from moderation import services
from moderation.models import QueueItem, QueueKind
from tests.fixtures import SignIn
from worlds.models import ReviewStatus, WorldVersion
from worlds.tests.factories import WorldFactory

pytestmark = pytest.mark.django_db


def item_page(signed_in: SignIn, moderator: User, item: QueueItem) -> str:
    return signed_in(moderator).get(reverse("moderation:item", args=[item.pk])).content.decode()


def offered(page: str, world_id: int, action: str) -> bool:
    return reverse("moderation:world_act", args=[world_id, action]) in page


def test_a_pending_submission_offers_approve_and_reject_and_no_world_action(
    signed_in: SignIn, publish: Callable[..., WorldVersion], moderator: User
) -> None:
    version = publish(WorldFactory())
    page = item_page(signed_in, moderator, QueueItem.objects.get(version=version))
    assert reverse("moderation:version_decide", args=[version.pk, "approve"]) in page
    assert reverse("moderation:version_decide", args=[version.pk, "reject"]) in page
    for action in ("restore", "take-down", "feature", "unfeature"):
        assert not offered(page, version.world_id, action), action
    assert "Restore the world" not in page


def test_a_submission_no_longer_pending_offers_no_decision(
    signed_in: SignIn, publish: Callable[..., WorldVersion], moderator: User
) -> None:
    version = publish(WorldFactory())
    WorldVersion.objects.filter(pk=version.pk).update(status=ReviewStatus.REJECTED)
    page = item_page(signed_in, moderator, QueueItem.objects.get(version=version))
    assert reverse("moderation:version_decide", args=[version.pk, "approve"]) not in page
    assert "Version 1 is rejected: there is nothing to decide." in page


def test_a_report_of_a_live_world_offers_take_down_and_feature_but_not_restore(
    signed_in: SignIn, listed: Callable[..., Listing], moderator: User
) -> None:
    listing = listed()
    report = services.report_file(reporter=UserFactory(), world=listing.world, subject="world", reason="spam")
    page = item_page(signed_in, moderator, report.queue_item)
    assert offered(page, listing.world_id, "take-down") and offered(page, listing.world_id, "feature")
    assert not offered(page, listing.world_id, "restore") and not offered(page, listing.world_id, "unfeature")


def test_a_featured_world_offers_unfeature_instead_of_feature(
    signed_in: SignIn, listed: Callable[..., Listing], moderator: User
) -> None:
    listing = listed()
    services.world_feature(world=listing.world, moderator=moderator, featured=True)
    report = services.report_file(reporter=UserFactory(), world=listing.world, subject="world", reason="spam")
    page = item_page(signed_in, moderator, report.queue_item)
    assert offered(page, listing.world_id, "unfeature") and not offered(page, listing.world_id, "feature")


def test_a_taken_down_world_offers_restore_and_neither_take_down_nor_feature(
    signed_in: SignIn, listed: Callable[..., Listing], publish: Callable[..., WorldVersion], moderator: User
) -> None:
    world = listed().world
    services.world_take_down(world=world, moderator=moderator, reason="Reported for harassment")
    resubmitted = publish(world)
    page = item_page(signed_in, moderator, QueueItem.objects.get(kind=QueueKind.SUBMISSION, version=resubmitted))
    assert offered(page, world.pk, "restore")
    for action in ("take-down", "feature", "unfeature"):
        assert not offered(page, world.pk, action), action
