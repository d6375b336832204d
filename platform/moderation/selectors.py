"""Reads for moderation: the queue, one item with its content and checks, a creator's submissions, the log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from allauth.mfa.models import Authenticator
from allauth.mfa.utils import is_mfa_enabled
from django.conf import settings
from django.db.models import Q, QuerySet

from accounts.models import User
from gallery.models import Listing
from moderation.checks import term_filter_load
from moderation.models import (
    APPEALABLE_ACTIONS,
    AuditEntry,
    BlockedOutput,
    CheckResult,
    QueueItem,
)
from worlds.models import ReviewStatus, World, WorldVersion

QUEUE_PAGE_SIZE = 50
BLOCKED_OUTPUTS_PAGE_SIZE = 100


def second_factor_missing(*, moderator: User) -> bool:
    """Whether policy asks this moderator for an authenticator app they have not set up yet.

    Holding one is enough: once it is set up, allauth asks for its code at every log-in.
    """
    return settings.MODERATORS_REQUIRE_SECOND_FACTOR and not is_mfa_enabled(moderator, [Authenticator.Type.TOTP])


def queue_open(
    *, kind: str = "", category: str = "", rating: str = "", verdict: str = "", limit: int = QUEUE_PAGE_SIZE
) -> list[QueueItem]:
    """Open items oldest first, optionally of one kind, category, content rating or automated verdict."""
    items = QueueItem.objects.filter(closed_at__isnull=True)
    filters = {"kind": kind, "category": category, "content_rating": rating, "automated_verdict": verdict}
    items = items.filter(**{name: value for name, value in filters.items() if value})
    return list(
        items.select_related("world__owner", "version", "report", "appeal__decision").order_by("opened_at", "id")[
            :limit
        ]
    )


@dataclass(frozen=True)
class WorldActions:
    """The actions on a world that apply to it now: the services refuse the others, so pages do not offer them."""

    take_down: bool  # something of it is public
    restore: bool  # something of it was taken down
    feature: bool  # it is in the gallery and not featured
    unfeature: bool  # it is featured


def world_actions(*, world: World) -> WorldActions:
    statuses = set(world.versions.values_list("status", flat=True))
    listing = Listing.objects.filter(world=world, version__isnull=False).only("featured_at").first()
    return WorldActions(
        take_down=ReviewStatus.APPROVED in statuses,
        restore=ReviewStatus.TAKEN_DOWN in statuses,
        feature=listing is not None and listing.featured_at is None,
        unfeature=listing is not None and listing.featured_at is not None,
    )


@dataclass(frozen=True)
class QueueItemDetail:
    item: QueueItem
    document: dict[str, Any] | None
    checks: list[CheckResult]
    live_version: WorldVersion | None
    history: list[AuditEntry]
    world_actions: WorldActions
    # A submission is decided only while its version waits: approved, rejected or taken down, it is settled.
    decidable: bool


def queue_item_detail(*, item_id: int) -> QueueItemDetail:
    item = QueueItem.objects.select_related(
        "world__owner", "version__reviewed_by", "report__reporter", "appeal__decision__actor"
    ).get(pk=item_id)
    version = item.version
    live = item.world.versions.filter(status=ReviewStatus.APPROVED).order_by("-number").first()
    history = AuditEntry.objects.filter(
        Q(target_kind="world", target_id=item.world_id)
        | Q(target_kind="version", target_id__in=item.world.versions.values("pk"))
        | Q(target_kind="user", target_id=item.world.owner_id)
    ).select_related("actor")[:20]
    return QueueItemDetail(
        item=item,
        document=version.document if version else None,
        checks=list(version.checks.all()) if version else [],
        live_version=live,
        history=list(history),
        world_actions=world_actions(world=item.world),
        decidable=version is not None and version.status == ReviewStatus.PENDING,
    )


def submissions_of(*, creator: User) -> QuerySet[WorldVersion]:
    """A creator's submitted versions, newest first, with the moderators' decisions and the checks."""
    return (
        WorldVersion.objects.filter(world__owner=creator)
        .select_related("world")
        .prefetch_related("checks")
        .order_by("-published_at", "-id")
    )


def decisions_about(*, creator: User) -> list[AuditEntry]:
    """Decisions a creator may read: about their versions, their worlds and themselves, with any appeal."""
    versions = WorldVersion.objects.filter(world__owner=creator).values("pk")
    return list(
        AuditEntry.objects.filter(
            Q(target_kind="version", target_id__in=versions)
            | Q(target_kind="world", target_id__in=creator.worlds.values("pk"))
            | Q(target_kind="user", target_id=creator.pk)
        ).select_related("appeal")[:100]
    )


def appealable(*, entry: AuditEntry) -> bool:
    return entry.action in APPEALABLE_ACTIONS and not hasattr(entry, "appeal")


def audit_log(*, limit: int = 200) -> QuerySet[AuditEntry]:
    return AuditEntry.objects.select_related("actor")[:limit]


def safety_terms() -> dict[str, list[str]]:
    """The term filter's lists by severity, for a worker to check generated text with (`TermFilter.from_dict`).

    The file is read once per process; each call returns a fresh dict, so a caller may change its copy.
    """
    return term_filter_load().to_dict()


def blocked_outputs_newest(*, limit: int = BLOCKED_OUTPUTS_PAGE_SIZE) -> list[BlockedOutput]:
    return list(BlockedOutput.objects.select_related("world__owner")[:limit])
