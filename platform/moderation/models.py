"""What moderators work with: automated check results, the review queue, reports, appeals and the audit log."""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from django.db import models
from django.utils import timezone

from worlds.categories import Category
from worlds.models import ContentRating, World, WorldVersion, bounded_text


class CheckKind(models.TextChoices):
    TERMS = "terms", "Term filter"
    RATING = "rating", "Content rating rules"
    IMAGES = "images", "Images"
    REFERENCES = "references", "References"
    PREVIEW = "preview", "Generated preview"


class Verdict(models.TextChoices):
    """An automated check's opinion; a queue item's is the worst of its checks, `pending` until all are in."""

    PENDING = "pending", "Checks running"
    PASS = "pass", "Pass"
    FLAG = "flag", "Needs a look"
    FAIL = "fail", "Fail"


# Worst last: a submission's verdict is the highest-ranked verdict among its checks.
VERDICT_SEVERITY = [Verdict.PASS, Verdict.FLAG, Verdict.FAIL]


class CheckResult(models.Model):
    """One automated check of one submitted version, with its verdict and the reason for it."""

    version = models.ForeignKey(WorldVersion, on_delete=models.CASCADE, related_name="checks")
    kind = models.CharField(max_length=12, choices=CheckKind.choices)
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    reason = models.TextField()
    details = models.JSONField(default=dict, blank=True)  # findings by place in the document, a greeting sample
    image = models.ImageField(upload_to="previews/", blank=True)  # the preview's thumbnail frame
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind"]
        # Tasks are acknowledged late, so a lost worker means a second run: the second finds the first's row.
        constraints = [models.UniqueConstraint(fields=["version", "kind"], name="check_once_per_version_and_kind")]

    def __str__(self) -> str:
        return f"{self.version} {self.kind}: {self.verdict}"


class ReportSubject(models.TextChoices):
    WORLD = "world", "The world"
    CHARACTER = "character", "A character"
    SESSION_MESSAGE = "session_message", "A message in a live session"
    GENERATED_LINE = "generated_line", "A generated line"


class ReportReason(models.TextChoices):
    HARMFUL = "harmful", "Harmful or dangerous"
    HATE = "hate", "Hateful"
    HARASSMENT = "harassment", "Harassment or bullying"
    SEXUAL = "sexual", "Sexual content"
    CHILD_SAFETY = "child_safety", "Endangers children"
    WRONG_RATING = "wrong_rating", "Wrong content rating"
    SPAM = "spam", "Spam or scam"
    RIGHTS = "rights", "Someone else's work"
    OTHER = "other", "Something else"


class Report(models.Model):
    """A player's report of a world or something in it, with the context it was seen in."""

    reporter = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="reports")
    version = models.ForeignKey(WorldVersion, null=True, on_delete=models.SET_NULL, related_name="reports")
    subject = models.CharField(max_length=16, choices=ReportSubject.choices)
    character_name = models.CharField(max_length=100, blank=True)
    reason = models.CharField(max_length=16, choices=ReportReason.choices)
    note = bounded_text(blank=True, max_length=2000)
    # What the reporter saw: a transcript excerpt, the frame's id, the generated line; shown to moderators as is.
    context = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"report of {self.world} ({self.reason})"


class AuditAction(models.TextChoices):
    APPROVE = "approve", "Approved a version"
    REJECT = "reject", "Rejected a version"
    TAKE_DOWN = "take_down", "Took a world down"
    RESTORE = "restore", "Restored a world"
    DISMISS_REPORT = "dismiss_report", "Dismissed a report"
    FEATURE = "feature", "Featured a world"
    UNFEATURE = "unfeature", "Stopped featuring a world"
    WARN = "warn", "Warned a person"
    SUSPEND = "suspend", "Suspended a person"
    REINSTATE = "reinstate", "Lifted a suspension"
    GRANT_APPEAL = "grant_appeal", "Granted an appeal"
    DENY_APPEAL = "deny_appeal", "Denied an appeal"


# Decisions a creator may appeal, once each.
APPEALABLE_ACTIONS = (AuditAction.REJECT, AuditAction.TAKE_DOWN)


class AuditEntryQuerySet(models.QuerySet):
    """Bulk writes would bypass the model's refusals, so they refuse too."""

    def update(self, **kwargs: Any) -> NoReturn:
        raise AuditLogIsAppendOnly

    def delete(self) -> NoReturn:
        raise AuditLogIsAppendOnly


class AuditLogIsAppendOnly(Exception):
    def __init__(self) -> None:
        super().__init__("the audit log is append-only: entries are never changed or deleted")


class AuditEntry(models.Model):
    """Who did what to which target, when and why: written once, never changed (see migration 0002's trigger).

    Targets are kept as kind, id and label rather than foreign keys, so an entry outlives what it names and
    no cascade can ever rewrite or delete it.
    """

    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    action = models.CharField(max_length=16, choices=AuditAction.choices)
    target_kind = models.CharField(max_length=12)  # "world", "version", "user", "report" or "appeal"
    target_id = models.BigIntegerField()
    target_label = models.CharField(max_length=200)
    reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [models.Index(fields=["target_kind", "target_id"], name="audit_target")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor}: {self.get_action_display()} {self.target_label}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AuditLogIsAppendOnly
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AuditLogIsAppendOnly


class AppealOutcome(models.TextChoices):
    PENDING = "pending", "Waiting for a moderator"
    GRANTED = "granted", "Granted"
    DENIED = "denied", "Denied"


class Appeal(models.Model):
    """A creator's one appeal against a rejection or a takedown (one per decision, so one per audit entry)."""

    decision = models.OneToOneField(AuditEntry, on_delete=models.PROTECT, related_name="appeal")
    creator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="appeals")
    version = models.ForeignKey(WorldVersion, on_delete=models.CASCADE, related_name="appeals")
    statement = bounded_text(max_length=2000)
    outcome = models.CharField(max_length=8, choices=AppealOutcome.choices, default=AppealOutcome.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"appeal of {self.decision}"


class QueueKind(models.TextChoices):
    SUBMISSION = "submission", "Submission"
    REPORT = "report", "Report"
    APPEAL = "appeal", "Appeal"


class QueueItem(models.Model):
    """One thing waiting for a moderator: a submitted version, a report or an appeal.

    What the queue filters on (category, rating, automated verdict) is copied in when the item opens, so
    the queue is one indexed table, oldest first, whatever mix of kinds it holds.
    """

    kind = models.CharField(max_length=10, choices=QueueKind.choices)
    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="+")
    version = models.ForeignKey(WorldVersion, null=True, on_delete=models.CASCADE, related_name="queue_items")
    report = models.OneToOneField(Report, null=True, on_delete=models.CASCADE, related_name="queue_item")
    appeal = models.OneToOneField(Appeal, null=True, on_delete=models.CASCADE, related_name="queue_item")
    category = models.CharField(max_length=12, choices=Category.choices)
    content_rating = models.CharField(max_length=8, choices=ContentRating.choices)
    automated_verdict = models.CharField(max_length=8, choices=Verdict.choices, default=Verdict.PENDING)
    opened_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["opened_at", "id"]
        indexes = [
            models.Index(
                fields=["opened_at", "id"], condition=models.Q(closed_at__isnull=True), name="queue_open_oldest_first"
            )
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["version"], condition=models.Q(kind="submission"), name="queue_one_submission_per_version"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.world}"


class BlockedOutput(models.Model):
    """Generated text the safety filter kept from a player, with the terms that stopped it, for moderators.

    The session is kept as its id rather than a foreign key: the record outlives the session, and the worker
    that reports it knows the id only.
    """

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="blocked_outputs")
    session_id = models.UUIDField(db_index=True)
    character_name = models.CharField(max_length=100, blank=True)  # blank: the narrator spoke
    text = models.TextField()
    terms = models.JSONField(default=list)  # the refused terms found, most severe first
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"blocked output in {self.world} ({', '.join(self.terms)})"
