"""Moderation's JSON API: players report, creators read their submissions and appeal, moderators work the queue."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import reverse_lazy
from django.utils.text import format_lazy
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import User
from accounts.roles import MODERATE
from gallery.models import Listing
from moderation import selectors, services
from moderation.models import (
    Appeal,
    AuditEntry,
    CheckResult,
    QueueItem,
    QueueKind,
    Report,
    ReportReason,
    ReportSubject,
    Verdict,
)
from worlds.categories import Category
from worlds.models import ContentRating, World, WorldVersion


class IsModerator(permissions.BasePermission):
    """Signed in and holding the moderator role."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.has_perm(MODERATE))


class HasSecondFactor(permissions.BasePermission):
    """A moderator holding the second factor that policy asks for (checked after IsModerator)."""

    message = format_lazy(
        "Moderating needs a second factor: set up an authenticator app at {} first.", reverse_lazy("mfa_index")
    )

    def has_permission(self, request: Request, view: Any) -> bool:
        return not selectors.second_factor_missing(moderator=request.user)


MODERATOR_PERMISSIONS = [IsModerator, HasSecondFactor]


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000, allow_blank=True, default="")


class AuditEntrySerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username")

    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "actor",
            "action",
            "target_kind",
            "target_id",
            "target_label",
            "reason",
            "details",
            "created_at",
        ]


class CheckResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = CheckResult
        fields = ["kind", "verdict", "reason", "details", "created_at"]


class QueueItemSerializer(serializers.ModelSerializer):
    world = serializers.CharField(source="world.slug")
    world_title = serializers.CharField(source="world.title")
    creator = serializers.CharField(source="world.owner.username")
    version_number = serializers.IntegerField(source="version.number", allow_null=True, default=None)

    class Meta:
        model = QueueItem
        fields = [
            "id",
            "kind",
            "world",
            "world_title",
            "creator",
            "version",
            "version_number",
            "report",
            "appeal",
            "category",
            "content_rating",
            "automated_verdict",
            "opened_at",
            "closed_at",
        ]


class ReportCreateApi(APIView):
    """Report a world, a character, a live-session message or a generated line, with what you saw."""

    permission_classes = [permissions.IsAuthenticated]

    class InputSerializer(serializers.Serializer):
        world = serializers.SlugField(help_text="the world's slug")
        subject = serializers.ChoiceField(choices=ReportSubject.choices)
        reason = serializers.ChoiceField(choices=ReportReason.choices)
        note = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
        character_name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
        context = serializers.DictField(
            required=False, default=dict, help_text="what was seen: a transcript excerpt, the frame, the line"
        )

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request: Request) -> Response:
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        data = dict(given.validated_data)
        # Only what a player can see can be reported: a listed world (sessions play listed versions).
        listing = get_object_or_404(Listing, slug=data.pop("world"), version__isnull=False)
        report = services.report_file(reporter=request.user, world=listing.world, **data)
        return Response({"id": report.pk}, status=status.HTTP_201_CREATED)


class QueueListApi(APIView):
    """Open queue items, oldest first, filtered by kind, category, rating or automated verdict."""

    permission_classes = MODERATOR_PERMISSIONS

    class InputSerializer(serializers.Serializer):
        kind = serializers.ChoiceField(choices=QueueKind.choices, required=False)
        category = serializers.ChoiceField(choices=Category.choices, required=False)
        rating = serializers.ChoiceField(choices=ContentRating.choices, required=False)
        verdict = serializers.ChoiceField(choices=Verdict.choices, required=False)

    @extend_schema(parameters=[InputSerializer], responses=QueueItemSerializer(many=True))
    def get(self, request: Request) -> Response:
        given = self.InputSerializer(data=request.query_params)
        given.is_valid(raise_exception=True)
        return Response(QueueItemSerializer(selectors.queue_open(**given.validated_data), many=True).data)


class QueueItemDetailApi(APIView):
    """One queue item with the content (the version's document), the check results and the report or appeal."""

    permission_classes = MODERATOR_PERMISSIONS

    class OutputSerializer(serializers.Serializer):
        item = QueueItemSerializer()
        document = serializers.JSONField(allow_null=True)
        checks = CheckResultSerializer(many=True)
        report = serializers.SerializerMethodField()
        appeal = serializers.SerializerMethodField()

        def get_report(self, detail: selectors.QueueItemDetail) -> dict[str, Any] | None:
            report = detail.item.report
            if report is None:
                return None
            fields = ("subject", "character_name", "reason", "note", "context", "created_at")
            return {name: getattr(report, name) for name in fields}

        def get_appeal(self, detail: selectors.QueueItemDetail) -> dict[str, Any] | None:
            appeal = detail.item.appeal
            if appeal is None:
                return None
            return {"decision": AuditEntrySerializer(appeal.decision).data, "statement": appeal.statement}

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request, item_id: int) -> Response:
        get_object_or_404(QueueItem, pk=item_id)
        return Response(self.OutputSerializer(selectors.queue_item_detail(item_id=item_id)).data)


class VersionReviewApi(APIView):
    """Approve or reject a submitted version; a rejection needs a reason, which the creator reads."""

    permission_classes = MODERATOR_PERMISSIONS

    class InputSerializer(ReasonSerializer):
        decision = serializers.ChoiceField(choices=["approve", "reject"])

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = WorldVersion
            fields = ["id", "number", "status", "reason", "reviewed_at"]

    @extend_schema(request=InputSerializer, responses=OutputSerializer)
    def post(self, request: Request, version_id: int) -> Response:
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        version = get_object_or_404(WorldVersion, pk=version_id)
        decide = services.version_approve if given.validated_data["decision"] == "approve" else services.version_reject
        version = decide(version=version, moderator=request.user, reason=given.validated_data["reason"])
        return Response(self.OutputSerializer(version).data)


class WorldModerateApi(APIView):
    """Take a world down, restore it, or feature it on the home page (or stop)."""

    permission_classes = MODERATOR_PERMISSIONS

    class InputSerializer(ReasonSerializer):
        action = serializers.ChoiceField(choices=["take_down", "restore", "feature", "unfeature"])

    @extend_schema(request=InputSerializer, responses=AuditEntrySerializer)
    def post(self, request: Request, world_id: int) -> Response:
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        world = get_object_or_404(World, pk=world_id)
        action, reason = given.validated_data["action"], given.validated_data["reason"]
        if action in ("feature", "unfeature"):
            entry = services.world_feature(
                world=world, moderator=request.user, featured=action == "feature", reason=reason
            )
        else:
            service = services.world_take_down if action == "take_down" else services.world_restore
            entry = service(world=world, moderator=request.user, reason=reason)
        return Response(AuditEntrySerializer(entry).data)


class UserModerateApi(APIView):
    """Warn a person (they read it on their submissions page), suspend their account, or lift a suspension."""

    permission_classes = MODERATOR_PERMISSIONS
    SERVICES = {"warn": services.user_warn, "suspend": services.user_suspend, "reinstate": services.user_reinstate}

    class InputSerializer(ReasonSerializer):
        action = serializers.ChoiceField(choices=["warn", "suspend", "reinstate"])

    @extend_schema(request=InputSerializer, responses=AuditEntrySerializer)
    def post(self, request: Request, user_id: int) -> Response:
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        person = get_object_or_404(User, pk=user_id)
        service = self.SERVICES[given.validated_data["action"]]
        entry = service(user=person, moderator=request.user, reason=given.validated_data["reason"])
        return Response(AuditEntrySerializer(entry).data)


class ReportDismissApi(APIView):
    """Close a report that needs no action, saying why."""

    permission_classes = MODERATOR_PERMISSIONS

    @extend_schema(request=ReasonSerializer, responses=None)
    def post(self, request: Request, report_id: int) -> Response:
        given = ReasonSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        report = get_object_or_404(Report, pk=report_id)
        services.report_dismiss(report=report, moderator=request.user, reason=given.validated_data["reason"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class AppealCreateApi(APIView):
    """Appeal a rejection or takedown of your work, once per decision (the decision's audit entry id)."""

    permission_classes = [permissions.IsAuthenticated]

    class InputSerializer(serializers.Serializer):
        decision = serializers.IntegerField()
        statement = serializers.CharField(max_length=2000)

    class OutputSerializer(serializers.ModelSerializer):
        class Meta:
            model = Appeal
            fields = ["id", "decision", "statement", "outcome", "created_at"]

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer})
    def post(self, request: Request) -> Response:
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        decision = get_object_or_404(AuditEntry, pk=given.validated_data["decision"])
        appeal = services.appeal_file(
            decision=decision, creator=request.user, statement=given.validated_data["statement"]
        )
        return Response(self.OutputSerializer(appeal).data, status=status.HTTP_201_CREATED)


class AppealDecideApi(APIView):
    """Grant an appeal (approve the rejected version, or restore the world) or deny it, saying why."""

    permission_classes = MODERATOR_PERMISSIONS

    class InputSerializer(ReasonSerializer):
        grant = serializers.BooleanField()

    @extend_schema(request=InputSerializer, responses=AppealCreateApi.OutputSerializer)
    def post(self, request: Request, appeal_id: int) -> Response:
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        appeal = get_object_or_404(Appeal, pk=appeal_id)
        appeal = services.appeal_decide(appeal=appeal, moderator=request.user, **given.validated_data)
        return Response(AppealCreateApi.OutputSerializer(appeal).data)


class SubmissionListApi(APIView):
    """Your submitted versions with their review status, the moderators' reasons and the automated checks."""

    permission_classes = [permissions.IsAuthenticated]

    class OutputSerializer(serializers.ModelSerializer):
        world = serializers.CharField(source="world.slug")
        checks = CheckResultSerializer(many=True)

        class Meta:
            model = WorldVersion
            fields = ["id", "world", "number", "published_at", "status", "reason", "reviewed_at", "checks"]

    @extend_schema(responses=OutputSerializer(many=True))
    def get(self, request: Request) -> Response:
        versions = selectors.submissions_of(creator=request.user)[:100]
        return Response(self.OutputSerializer(versions, many=True).data)


class AuditLogApi(APIView):
    """The audit log, newest first (read-only: there is no way to change it)."""

    permission_classes = MODERATOR_PERMISSIONS

    @extend_schema(responses=AuditEntrySerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(AuditEntrySerializer(selectors.audit_log(), many=True).data)
