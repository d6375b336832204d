"""Reports, takedowns, people, appeals and the audit log that records every moderator action."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.admin.sites import site
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import DatabaseError, connection, transaction
from django.test import Client, RequestFactory
from django.urls import reverse
from rest_framework.test import APIClient

from accounts.models import User
from accounts.tests.factories import PASSWORD, ModeratorFactory, UserFactory
from gallery.models import Listing
from moderation import services
from moderation.models import AppealOutcome, AuditAction, AuditEntry, AuditLogIsAppendOnly, QueueItem, QueueKind
from worlds.models import ReviewStatus, WorldVersion
from worlds.tests.factories import WorldFactory

pytestmark = pytest.mark.django_db


def api_for(user: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_report_with_context_lands_in_the_queue_and_a_takedown_removes_the_world_everywhere(
    listed: Callable[..., Listing], moderator: User
) -> None:
    listing = listed(title="Foghaven", logline="A harbour in fog.")
    slug, version = listing.slug, listing.version
    player = UserFactory()
    context = {"session": "3f1c", "transcript": [{"speaker": "Eve", "text": "a line that should not be"}]}
    report = {
        "world": slug,
        "subject": "generated_line",
        "reason": "harassment",
        "note": "Eve insulted me.",
        "character_name": "Eve",
        "context": context,
    }
    assert api_for(player).post("/api/moderation/reports/", report, format="json").status_code == 201

    [item] = QueueItem.objects.filter(kind=QueueKind.REPORT)
    detail = api_for(moderator).get(f"/api/moderation/queue/{item.pk}/").json()
    assert detail["report"]["context"] == context
    assert detail["report"]["note"] == "Eve insulted me."
    page = Client()
    page.force_login(moderator)
    assert "a line that should not be" in page.get(reverse("moderation:item", args=[item.pk])).content.decode()
    response = api_for(moderator).post(
        f"/api/moderation/worlds/{listing.world_id}/actions/",
        {"action": "take_down", "reason": "Harasses players."},
        format="json",
    )
    assert response.status_code == 200, response.json()

    anonymous = Client()
    assert "Foghaven" not in anonymous.get(reverse("gallery:home")).content.decode()
    assert "Foghaven" not in anonymous.get(reverse("gallery:category", args=["games"])).content.decode()
    assert "Foghaven" not in anonymous.get(reverse("gallery:search"), {"q": "foghaven"}).content.decode()
    assert anonymous.get(reverse("gallery:world", args=[slug])).status_code == 404
    assert APIClient().get(f"/api/gallery/worlds/{slug}/").status_code == 404
    assert APIClient().get("/api/gallery/worlds/", {"q": "foghaven"}).json()["results"] == []
    assert APIClient().get(f"/api/versions/{version.pk}/").status_code == 404
    assert api_for(UserFactory()).post(f"/api/versions/{version.pk}/remix/").status_code == 404
    assert WorldVersion.objects.get(pk=version.pk).status == ReviewStatus.TAKEN_DOWN
    assert QueueItem.objects.get(pk=item.pk).closed_at is not None
    entry = AuditEntry.objects.get(action=AuditAction.TAKE_DOWN)
    assert (entry.actor, entry.target_id, entry.reason) == (moderator, listing.world_id, "Harasses players.")


def test_a_restore_brings_the_world_back_with_its_likes(listed: Callable[..., Listing], moderator: User) -> None:
    listing = listed(title="Foghaven")
    api_for(UserFactory()).post(f"/api/gallery/worlds/{listing.slug}/like/")
    services.world_take_down(world=listing.world, moderator=moderator, reason="Looks like spam.")
    services.world_restore(world=listing.world, moderator=moderator, reason="It was not spam.")
    card = APIClient().get(f"/api/gallery/worlds/{listing.slug}/").json()
    assert (card["title"], card["like_count"]) == ("Foghaven", 1)


def test_every_moderator_action_is_in_the_audit_log_with_who_what_and_why(
    listed: Callable[..., Listing], publish: Callable[..., WorldVersion], moderator: User
) -> None:
    listing = listed()
    rejected = publish(WorldFactory())
    creator = rejected.world.owner
    report = services.report_file(reporter=UserFactory(), world=listing.world, subject="world", reason="spam")
    services.version_reject(version=rejected, moderator=moderator, reason="Broken cover.")
    services.world_feature(world=listing.world, moderator=moderator, featured=True)
    services.report_dismiss(report=report, moderator=moderator, reason="Not spam.")
    services.world_take_down(world=listing.world, moderator=moderator, reason="Stolen art.")
    services.world_restore(world=listing.world, moderator=moderator, reason="The artist agreed.")
    services.user_warn(user=creator, moderator=moderator, reason="Mind the rules on covers.")
    services.user_suspend(user=creator, moderator=moderator, reason="Repeated stolen art.")
    services.user_reinstate(user=creator, moderator=moderator, reason="Suspension served.")

    log = list(AuditEntry.objects.order_by("id").values_list("action", "actor", "reason"))
    assert [action for action, _, _ in log] == [
        "approve",
        "reject",
        "feature",
        "dismiss_report",
        "take_down",
        "restore",
        "warn",
        "suspend",
        "reinstate",
    ]
    assert all(actor == moderator.pk for _, actor, _ in log)
    assert ("warn", moderator.pk, "Mind the rules on covers.") in log
    page = Client()
    page.force_login(moderator)
    assert "Stolen art." in page.get(reverse("moderation:audit")).content.decode()
    assert len(api_for(moderator).get("/api/moderation/audit/").json()) == len(log)


def test_the_audit_log_cannot_be_changed_or_deleted(listed: Callable[..., Listing]) -> None:
    listed()
    entry = AuditEntry.objects.get()
    entry.reason = "rewritten"
    with pytest.raises(AuditLogIsAppendOnly):
        entry.save()
    with pytest.raises(AuditLogIsAppendOnly):
        entry.delete()
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEntry.objects.filter(pk=entry.pk).update(reason="rewritten")
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEntry.objects.all().delete()
    # Below the ORM the database refuses too.
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE moderation_auditentry SET reason = 'rewritten'")
    if connection.vendor == "postgresql":
        with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("DELETE FROM moderation_auditentry")
    assert AuditEntry.objects.get().reason == ""
    admin = site._registry[AuditEntry]
    request = RequestFactory().get("/")
    request.user = User.objects.create_superuser("root", "root@example.com", PASSWORD)
    assert not admin.has_add_permission(request)
    assert not admin.has_change_permission(request, entry)
    assert not admin.has_delete_permission(request, entry)
    assert admin.has_view_permission(request, entry)


def test_a_creator_appeals_a_rejection_once_and_a_granted_appeal_puts_the_version_live(
    publish: Callable[..., WorldVersion], moderator: User
) -> None:
    world = WorldFactory(title="Foghaven")
    version = publish(world)
    services.version_reject(version=version, moderator=moderator, reason="Looks unfinished.")
    decision = AuditEntry.objects.get(action=AuditAction.REJECT)
    creator = api_for(world.owner)
    appeal = {"decision": decision.pk, "statement": "It is a deliberately sparse world."}
    response = creator.post("/api/moderation/appeals/", appeal, format="json")
    assert response.status_code == 201, response.json()
    again = creator.post("/api/moderation/appeals/", appeal, format="json")
    assert again.status_code == 400
    assert "appealed once" in str(again.json())

    [item] = QueueItem.objects.filter(kind=QueueKind.APPEAL, closed_at__isnull=True)
    assert item.version == version
    page = Client()
    page.force_login(moderator)
    assert "deliberately sparse" in page.get(reverse("moderation:item", args=[item.pk])).content.decode()
    page.post(reverse("moderation:appeal_decide", args=[response.json()["id"], "grant"]), {"reason": "Fair point."})

    assert WorldVersion.objects.get(pk=version.pk).status == ReviewStatus.APPROVED
    assert Client().get(reverse("gallery:world", args=[world.slug])).status_code == 200
    assert AuditEntry.objects.filter(action=AuditAction.GRANT_APPEAL, reason="Fair point.").exists()
    assert QueueItem.objects.get(pk=item.pk).closed_at is not None


def test_a_denied_takedown_appeal_leaves_the_world_down(listed: Callable[..., Listing], moderator: User) -> None:
    listing = listed()
    decision = services.world_take_down(world=listing.world, moderator=moderator, reason="Stolen art.")
    appeal = services.appeal_file(decision=decision, creator=listing.creator, statement="I drew it myself.")
    services.appeal_decide(appeal=appeal, moderator=moderator, grant=False, reason="The original is dated 2019.")
    appeal.refresh_from_db()
    assert appeal.outcome == AppealOutcome.DENIED
    assert Listing.objects.get(pk=listing.pk).version is None
    with pytest.raises(ValidationError, match="already been appealed"):
        services.appeal_file(decision=decision, creator=listing.creator, statement="Please look again.")


def test_only_the_creator_appeals_and_only_rejections_and_takedowns(
    publish: Callable[..., WorldVersion], moderator: User
) -> None:
    version = publish(WorldFactory())
    services.version_reject(version=version, moderator=moderator, reason="No.")
    decision = AuditEntry.objects.get(action=AuditAction.REJECT)
    with pytest.raises(PermissionDenied):
        services.appeal_file(decision=decision, creator=UserFactory(), statement="Not mine, but still.")
    warning = services.user_warn(user=version.world.owner, moderator=moderator, reason="Careful.")
    with pytest.raises(ValidationError, match="only rejections and takedowns"):
        services.appeal_file(decision=warning, creator=version.world.owner, statement="Unfair.")


def test_a_warned_creator_reads_the_warning_and_a_suspended_one_cannot_sign_in(moderator: User) -> None:
    creator = UserFactory()
    services.user_warn(user=creator, moderator=moderator, reason="Keep covers your own.")
    page = Client()
    page.force_login(creator)
    assert "Keep covers your own." in page.get(reverse("moderation:submissions")).content.decode()
    moderation = Client()
    moderation.force_login(moderator)
    moderation.post(reverse("moderation:user_act", args=[creator.pk, "suspend"]), {"reason": "Repeated."})
    assert page.get(reverse("moderation:submissions")).status_code == 302  # signed out
    assert not Client().login(username=creator.username, password=PASSWORD)
    services.user_reinstate(user=creator, moderator=moderator, reason="Served.")
    assert Client().login(username=creator.username, password=PASSWORD)


def test_moderators_cannot_suspend_each_other(moderator: User) -> None:
    with pytest.raises(PermissionDenied):
        services.user_suspend(user=ModeratorFactory(), moderator=moderator, reason="Rivalry.")
    assert (
        api_for(UserFactory())
        .post(f"/api/moderation/people/{moderator.pk}/actions/", {"action": "suspend", "reason": "x"})
        .status_code
        == 403
    )
