"""Moderation's writes: submissions and their checks, decisions, reports, takedowns, people, appeals.

Every moderator action writes one audit entry in the same transaction as the change it records, so the log
and the state can never disagree.
"""

from __future__ import annotations

import logging
import uuid
from functools import partial
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import User
from accounts.roles import MODERATE
from accounts.services import user_sockets_close
from gallery.models import Listing
from gallery.services import listing_feature, listing_refresh
from moderation.checks import CHECKS
from moderation.events import world_taken_down
from moderation.models import (
    APPEALABLE_ACTIONS,
    VERDICT_SEVERITY,
    Appeal,
    AppealOutcome,
    AuditAction,
    AuditEntry,
    BlockedOutput,
    CheckKind,
    CheckResult,
    QueueItem,
    QueueKind,
    Report,
    Verdict,
)
from worlds.models import ReviewStatus, World, WorldVersion
from worlds.published import published_world

logger = logging.getLogger(__name__)

MAX_REPORT_CONTEXT_CHARACTERS = 20_000


def moderator_required(*, moderator: User, world: World | None = None) -> None:
    """Only moderators act, and never on their own work: nobody approves or restores what they made."""
    if not moderator.has_perm(MODERATE):
        raise PermissionDenied("only moderators can do this")
    if world is not None and world.owner_id == moderator.pk:
        raise PermissionDenied("moderators cannot decide on their own work")


def audit(*, actor: User, action: AuditAction, target: Any, reason: str = "", **details: Any) -> AuditEntry:
    kind = {World: "world", WorldVersion: "version", User: "user", Report: "report", Appeal: "appeal"}[type(target)]
    return AuditEntry.objects.create(
        actor=actor,
        action=action,
        target_kind=kind,
        target_id=target.pk,
        target_label=str(target)[:200],
        reason=reason,
        details=details,
    )


def reason_required(reason: str) -> str:
    reason = reason.strip()
    if not reason:
        raise ValidationError({"reason": "say why: the person affected will read it"})
    return reason


def queue_close(**match: Any) -> None:
    QueueItem.objects.filter(closed_at__isnull=True, **match).update(closed_at=timezone.now())


@transaction.atomic
def submission_open(*, version: WorldVersion) -> QueueItem:
    """Put a new version in the review queue and run its automated checks once it is committed."""
    from moderation.tasks import version_check_task  # tasks import this module

    facts = published_world(version).world
    item = QueueItem.objects.create(
        kind=QueueKind.SUBMISSION,
        world=version.world,
        version=version,
        category=facts.category,
        content_rating=facts.content_rating,
    )
    for kind in CheckKind:
        transaction.on_commit(partial(version_check_task.delay, version.pk, kind.value))
    return item


@transaction.atomic
def version_check(*, version: WorldVersion, kind: CheckKind) -> CheckResult:
    """Run one automated check and record its verdict; a second run of the same check returns the first's."""
    existing = CheckResult.objects.filter(version=version, kind=kind).first()
    if existing is not None:
        return existing
    outcome = CHECKS[kind](version)
    result = CheckResult(
        version=version, kind=kind, verdict=outcome.verdict, reason=outcome.reason, details=outcome.details
    )
    if outcome.image is not None:
        result.image.save(f"{version.world.slug}-v{version.number}.jpg", ContentFile(outcome.image), save=False)
    try:
        with transaction.atomic():
            result.save()
    except IntegrityError:  # a redelivered task finished first
        if result.image:
            result.image.delete(save=False)
        return CheckResult.objects.get(version=version, kind=kind)
    submission_verdict_refresh(version=version)
    if kind == CheckKind.PREVIEW and version.status == ReviewStatus.APPROVED:
        listing_refresh(world=version.world)  # approved before its preview was drawn: show the frame now
    return result


def submission_verdict_refresh(*, version: WorldVersion) -> None:
    """The queue shows the worst verdict among the checks, once all of them are in."""
    verdicts = list(version.checks.values_list("verdict", flat=True))
    if len(verdicts) < len(CheckKind):
        return
    worst = max(verdicts, key=VERDICT_SEVERITY.index)
    QueueItem.objects.filter(kind=QueueKind.SUBMISSION, version=version).update(automated_verdict=worst)


def version_locked(version: WorldVersion) -> WorldVersion:
    """Re-read the version under a row lock, so two moderators cannot decide on it at once."""
    return WorldVersion.objects.select_for_update().select_related("world").get(pk=version.pk)


@transaction.atomic
def version_approve(*, version: WorldVersion, moderator: User, reason: str = "") -> WorldVersion:
    """Make a pending version the world's live one; earlier approved versions stay for sessions pinned to them."""
    version = version_locked(version)
    moderator_required(moderator=moderator, world=version.world)
    if version.status != ReviewStatus.PENDING:
        raise ValidationError(f"version {version.number} is {version.get_status_display().lower()}, not pending")
    version_review(version=version, moderator=moderator, status=ReviewStatus.APPROVED, reason=reason.strip())
    queue_close(kind=QueueKind.SUBMISSION, version=version)
    audit(actor=moderator, action=AuditAction.APPROVE, target=version, reason=reason.strip())
    listing_refresh(world=version.world)
    return version


@transaction.atomic
def version_reject(*, version: WorldVersion, moderator: User, reason: str) -> WorldVersion:
    """Refuse a pending version; the creator sees the reason, and the live version (if any) stays live."""
    version = version_locked(version)
    moderator_required(moderator=moderator, world=version.world)
    if version.status != ReviewStatus.PENDING:
        raise ValidationError(f"version {version.number} is {version.get_status_display().lower()}, not pending")
    version_review(version=version, moderator=moderator, status=ReviewStatus.REJECTED, reason=reason_required(reason))
    queue_close(kind=QueueKind.SUBMISSION, version=version)
    audit(actor=moderator, action=AuditAction.REJECT, target=version, reason=version.reason)
    return version


def version_review(*, version: WorldVersion, moderator: User, status: ReviewStatus, reason: str) -> None:
    version.status, version.reviewed_by, version.reviewed_at, version.reason = status, moderator, timezone.now(), reason
    version.save(update_fields=["status", "reviewed_by", "reviewed_at", "reason"])


@transaction.atomic
def report_file(
    *,
    reporter: User,
    world: World,
    subject: str,
    reason: str,
    note: str = "",
    character_name: str = "",
    context: dict[str, Any] | None = None,
) -> Report:
    """Record a player's report with what they saw, and queue it for the moderators."""
    context = context or {}
    if len(str(context)) > MAX_REPORT_CONTEXT_CHARACTERS:
        raise ValidationError({"context": f"at most {MAX_REPORT_CONTEXT_CHARACTERS} characters of context"})
    listing = Listing.objects.filter(world=world).select_related("version").first()
    report = Report(
        reporter=reporter,
        world=world,
        version=listing.version if listing else None,
        subject=subject,
        character_name=character_name,
        reason=reason,
        note=note,
        context=context,
    )
    report.full_clean()
    report.save()
    QueueItem.objects.create(
        kind=QueueKind.REPORT,
        world=world,
        version=report.version,
        report=report,
        category=listing.category if listing else world.category,
        content_rating=listing.content_rating if listing else world.content_rating,
        automated_verdict=Verdict.PASS,  # reports have no automated checks; the filter treats them as checked
    )
    return report


@transaction.atomic
def report_dismiss(*, report: Report, moderator: User, reason: str) -> Report:
    moderator_required(moderator=moderator)
    report.resolved_at = timezone.now()
    report.save(update_fields=["resolved_at"])
    queue_close(kind=QueueKind.REPORT, report=report)
    audit(actor=moderator, action=AuditAction.DISMISS_REPORT, target=report, reason=reason_required(reason))
    return report


@transaction.atomic
def world_take_down(*, world: World, moderator: User, reason: str) -> AuditEntry:
    """Take a world out of the gallery, search and the API, end its sessions, and close its open reports."""
    moderator_required(moderator=moderator, world=world)
    reason = reason_required(reason)
    World.objects.select_for_update().filter(pk=world.pk).first()
    versions = list(world.versions.filter(status=ReviewStatus.APPROVED))
    if not versions:
        raise ValidationError("nothing of this world is public")
    for version in versions:
        version_review(version=version, moderator=moderator, status=ReviewStatus.TAKEN_DOWN, reason=reason)
    listing_refresh(world=world)
    sessions_ended = sum(ended for _, ended in world_taken_down.send(sender=World, world=world, reason=reason))
    now = timezone.now()
    Report.objects.filter(world=world, resolved_at__isnull=True).update(resolved_at=now)
    queue_close(kind=QueueKind.REPORT, world=world)
    return audit(
        actor=moderator,
        action=AuditAction.TAKE_DOWN,
        target=world,
        reason=reason,
        versions=[version.pk for version in versions],
        sessions_ended=sessions_ended,
    )


@transaction.atomic
def world_restore(*, world: World, moderator: User, reason: str) -> AuditEntry:
    """Undo a takedown: the versions it took down are approved again and the newest goes back on show."""
    moderator_required(moderator=moderator, world=world)
    reason = reason_required(reason)
    versions = list(world.versions.select_for_update().filter(status=ReviewStatus.TAKEN_DOWN))
    if not versions:
        raise ValidationError("this world has not been taken down")
    for version in versions:
        version_review(version=version, moderator=moderator, status=ReviewStatus.APPROVED, reason=reason)
    listing_refresh(world=world)
    return audit(
        actor=moderator,
        action=AuditAction.RESTORE,
        target=world,
        reason=reason,
        versions=[version.pk for version in versions],
    )


@transaction.atomic
def world_feature(*, world: World, moderator: User, featured: bool, reason: str = "") -> AuditEntry:
    """Put a listed world in the home page's featured row, or take it out."""
    moderator_required(moderator=moderator, world=world)
    listing = Listing.objects.select_for_update().filter(world=world, version__isnull=False).first()
    if listing is None:
        raise ValidationError("only a world in the gallery can be featured")
    listing_feature(listing=listing, featured=featured)
    action = AuditAction.FEATURE if featured else AuditAction.UNFEATURE
    return audit(actor=moderator, action=action, target=world, reason=reason.strip())


def person_required(*, moderator: User, person: User) -> None:
    moderator_required(moderator=moderator)
    if person == moderator or person.has_perm(MODERATE):
        raise PermissionDenied("moderators are warned and suspended by operators, not by each other")


@transaction.atomic
def user_warn(*, user: User, moderator: User, reason: str) -> AuditEntry:
    """A warning the person reads on their submissions page."""
    person_required(moderator=moderator, person=user)
    return audit(actor=moderator, action=AuditAction.WARN, target=user, reason=reason_required(reason))


@transaction.atomic
def user_suspend(*, user: User, moderator: User, reason: str) -> AuditEntry:
    """Deactivate the account: Django then refuses the person's log-ins and ends their signed-in sessions."""
    person_required(moderator=moderator, person=user)
    user.is_active = False
    user.save(update_fields=["is_active"])
    user_sockets_close(user_id=user.pk, reason="your account is suspended")
    return audit(actor=moderator, action=AuditAction.SUSPEND, target=user, reason=reason_required(reason))


@transaction.atomic
def user_reinstate(*, user: User, moderator: User, reason: str) -> AuditEntry:
    person_required(moderator=moderator, person=user)
    user.is_active = True
    user.save(update_fields=["is_active"])
    return audit(actor=moderator, action=AuditAction.REINSTATE, target=user, reason=reason_required(reason))


def decision_version(decision: AuditEntry) -> WorldVersion:
    """The version a decision concerns: the rejected one, or the newest a takedown took down."""
    if decision.action == AuditAction.REJECT:
        return WorldVersion.objects.select_related("world").get(pk=decision.target_id)
    return (
        WorldVersion.objects.select_related("world").filter(pk__in=decision.details["versions"]).order_by("-number")[0]
    )


@transaction.atomic
def appeal_file(*, decision: AuditEntry, creator: User, statement: str) -> Appeal:
    """A creator appeals a rejection or takedown of their work, once per decision; it returns to the queue."""
    if decision.action not in APPEALABLE_ACTIONS:
        raise ValidationError("only rejections and takedowns can be appealed")
    version = decision_version(decision)
    if version.world.owner_id != creator.pk:
        raise PermissionDenied("only the creator can appeal a decision about their work")
    appeal = Appeal(decision=decision, creator=creator, world=version.world, version=version, statement=statement)
    appeal.full_clean(validate_unique=False)
    try:
        with transaction.atomic():
            appeal.save()
    except IntegrityError:
        raise ValidationError("this decision has already been appealed; a decision can be appealed once") from None
    facts = published_world(version).world
    QueueItem.objects.create(
        kind=QueueKind.APPEAL,
        world=version.world,
        version=version,
        appeal=appeal,
        category=facts.category,
        content_rating=facts.content_rating,
        automated_verdict=version.queue_items.filter(kind=QueueKind.SUBMISSION)
        .values_list("automated_verdict", flat=True)
        .first()
        or Verdict.PASS,
    )
    return appeal


@transaction.atomic
def appeal_decide(*, appeal: Appeal, moderator: User, grant: bool, reason: str) -> Appeal:
    """Grant (approve the rejected version, or restore the world) or deny; either way the creator is told why."""
    appeal = Appeal.objects.select_for_update().select_related("decision", "version__world").get(pk=appeal.pk)
    moderator_required(moderator=moderator, world=appeal.world)
    reason = reason_required(reason)
    if appeal.outcome != AppealOutcome.PENDING:
        raise ValidationError("this appeal has been decided")
    if grant and appeal.decision.action == AuditAction.REJECT:
        version = version_locked(appeal.version)
        version_review(version=version, moderator=moderator, status=ReviewStatus.APPROVED, reason=reason)
        listing_refresh(world=version.world)
    elif grant:
        world_restore(world=appeal.world, moderator=moderator, reason=reason)
    appeal.outcome = AppealOutcome.GRANTED if grant else AppealOutcome.DENIED
    appeal.save(update_fields=["outcome"])
    queue_close(kind=QueueKind.APPEAL, appeal=appeal)
    audit(
        actor=moderator,
        action=AuditAction.GRANT_APPEAL if grant else AuditAction.DENY_APPEAL,
        target=appeal,
        reason=reason,
        decision=appeal.decision_id,
    )
    return appeal


@transaction.atomic
def generated_output_blocked_record(
    *, session_id: uuid.UUID | str, world_id: int, character: str, text: str, terms: list[str]
) -> BlockedOutput:
    """Keep generated text that the safety filter held back from a player, for moderators to read.

    `character` is the speaker's name, empty for the narrator; `terms` are the refused terms that were found.
    """
    return BlockedOutput.objects.create(
        session_id=session_id,
        world_id=world_id,
        character_name=character[: BlockedOutput._meta.get_field("character_name").max_length],
        text=text,
        terms=list(terms),
    )
