"""The authoring API: a creator's working copies (private), published versions (read-only), publish, remix.

Plain CRUD goes through ModelViewSets scoped to the caller's own rows, so another creator's drafts answer
404. Serializers only validate; every write is handed to the entity's service in worlds.services, the same
one the studio calls, so model validation gives the same messages. Nested rows (clues, lore entries, branches,
beats) are written with their parent and replace its old ones.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Model, QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.roles import CREATE
from worlds import services
from worlds.exports import EXPORT_FORMATS, EXPORT_MODELS, content_export
from worlds.imports import MAX_IMPORT_BYTES, content_import
from worlds.models import Beat, Character, Clue, Hook, HookBranch, Lorebook, LoreEntry, Story, World, WorldVersion
from worlds.selectors import version_document_for, versions_visible, world_latest_version


class CanCreate(permissions.BasePermission):
    """Signed in and holding the creator role."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.has_perm(CREATE))


class ClueSerializer(serializers.ModelSerializer):
    class Meta:
        model = Clue
        fields = ["name", "text", "condition", "condition_value"]


class LoreEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = LoreEntry
        exclude = ["id", "lorebook"]


class HookBranchSerializer(serializers.ModelSerializer):
    class Meta:
        model = HookBranch
        exclude = ["id", "hook"]


class BeatSerializer(serializers.ModelSerializer):
    class Meta:
        model = Beat
        exclude = ["id", "story"]


class NotNullJSONField(serializers.JSONField):
    """A JSON value that may not be null. DRF checks for null before it decodes a form field, so a form's text
    "null" slips past as None and reaches the database's NOT NULL constraint (a 500) without this check."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if value is None and not self.allow_null:
            self.fail("null")
        return value


class OwnedSerializer(serializers.ModelSerializer):
    """Validates one of the caller's rows, with its nested rows; the viewset hands the result to a service."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.JSONField: NotNullJSONField,
    }

    def own(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        user = self.context["request"].user
        # The schema view builds these serializers for anonymous visitors too; they own nothing.
        return queryset.filter(owner=user) if user.is_authenticated else queryset.none()


class LorebookSerializer(OwnedSerializer):
    entries = LoreEntrySerializer(many=True, required=False)

    class Meta:
        model = Lorebook
        exclude = ["owner"]


class CharacterSerializer(OwnedSerializer):
    clues = ClueSerializer(many=True, required=False)

    class Meta:
        model = Character
        exclude = ["owner", "portrait"]

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        fields["lorebook"].queryset = self.own(Lorebook.objects.all())
        return fields


class WorldSerializer(OwnedSerializer):
    tags = serializers.ListField(child=serializers.CharField(max_length=40), required=False, write_only=True)
    latest_version = serializers.SerializerMethodField()

    class Meta:
        model = World
        exclude = ["owner", "cover_image"]
        read_only_fields = ["slug", "remixed_from", "created_at", "updated_at"]

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        fields["characters"].child_relation.queryset = self.own(Character.objects.all())
        fields["lorebooks"].child_relation.queryset = self.own(Lorebook.objects.all())
        return fields

    def get_latest_version(self, world: World) -> int | None:
        latest = world_latest_version(world=world)
        return latest.number if latest else None

    def to_representation(self, world: World) -> dict[str, Any]:
        data = super().to_representation(world)
        data["tags"] = sorted(world.tags.values_list("name", flat=True))
        return data


class WorldPartSerializer(OwnedSerializer):
    """Hooks and stories belong to one of the caller's worlds."""

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        fields["world"].queryset = self.own(World.objects.all())
        return fields


class HookSerializer(WorldPartSerializer):
    branches = HookBranchSerializer(many=True, required=False)

    class Meta:
        model = Hook
        fields = "__all__"


class StorySerializer(WorldPartSerializer):
    beats = BeatSerializer(many=True, required=False)

    class Meta:
        model = Story
        fields = "__all__"

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        fields["characters"].child_relation.queryset = self.own(Character.objects.all())
        return fields


class VersionSerializer(serializers.ModelSerializer):
    world = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    creator = serializers.CharField(source="world.owner.username", read_only=True)
    document = serializers.SerializerMethodField()

    class Meta:
        model = WorldVersion
        fields = ["id", "world", "creator", "number", "published_at", "status", "document"]

    def get_document(self, version: WorldVersion) -> dict[str, Any]:
        return version_document_for(version=version, user=self.context["request"].user)


class OwnedViewSet(viewsets.ModelViewSet):
    """CRUD over the caller's own rows; everyone else's are invisible (404). Writes go to `created` and
    `updated`, which hand the validated values to the entity's service."""

    permission_classes = [CanCreate]
    owner_path = "owner"

    def get_queryset(self) -> QuerySet[Any]:
        model = self.get_serializer_class().Meta.model
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the types, with no caller
            return model.objects.none()
        return model.objects.filter(**{self.owner_path: self.request.user})

    def perform_create(self, serializer: serializers.BaseSerializer) -> None:
        serializer.instance = self.created(serializer.validated_data)

    def perform_update(self, serializer: serializers.BaseSerializer) -> None:
        serializer.instance = self.updated(serializer.instance, serializer.validated_data)

    def created(self, values: dict[str, Any]) -> Model:
        raise NotImplementedError

    def updated(self, instance: Any, values: dict[str, Any]) -> Model:
        raise NotImplementedError


class LorebookViewSet(OwnedViewSet):
    serializer_class = LorebookSerializer

    def created(self, values: dict[str, Any]) -> Lorebook:
        return services.lorebook_create(owner=self.request.user, **values)

    def updated(self, lorebook: Lorebook, values: dict[str, Any]) -> Lorebook:
        return services.lorebook_update(lorebook=lorebook, **values)


class CharacterViewSet(OwnedViewSet):
    serializer_class = CharacterSerializer

    def created(self, values: dict[str, Any]) -> Character:
        return services.character_create(owner=self.request.user, **values)

    def updated(self, character: Character, values: dict[str, Any]) -> Character:
        return services.character_update(character=character, **values)


class HookViewSet(OwnedViewSet):
    serializer_class = HookSerializer
    owner_path = "world__owner"

    def created(self, values: dict[str, Any]) -> Hook:
        return services.hook_create(**values)

    def updated(self, hook: Hook, values: dict[str, Any]) -> Hook:
        return services.hook_update(hook=hook, **values)


class StoryViewSet(OwnedViewSet):
    serializer_class = StorySerializer
    owner_path = "world__owner"

    def created(self, values: dict[str, Any]) -> Story:
        return services.story_create(**values)

    def updated(self, story: Story, values: dict[str, Any]) -> Story:
        return services.story_update(story=story, **values)


class WorldViewSet(OwnedViewSet):
    serializer_class = WorldSerializer

    def created(self, values: dict[str, Any]) -> World:
        return services.world_create(owner=self.request.user, **values)

    def updated(self, world: World, values: dict[str, Any]) -> World:
        return services.world_update(world=world, **values)

    @extend_schema(request=None, responses=VersionSerializer)
    @action(detail=True, methods=["post"])
    def publish(self, request: Request, pk: str) -> Response:
        """Freeze the working copy as the world's next published version."""
        version = services.world_publish(world=self.get_object(), by=request.user)
        return Response(VersionSerializer(version, context={"request": request}).data, status=status.HTTP_201_CREATED)


class VersionViewSet(viewsets.ReadOnlyModelViewSet):
    """Approved versions for anyone (mature ones for those who opted in), your own in any review state, and all
    of them for moderators; changed by no one."""

    serializer_class = VersionSerializer
    permission_classes = [permissions.AllowAny]

    def get_queryset(self) -> QuerySet[WorldVersion]:
        return versions_visible(user=self.request.user).select_related("world__owner")


class VersionRemixApi(APIView):
    """Fork a published version into a new working copy of the caller's, crediting the original."""

    permission_classes = [CanCreate]

    @extend_schema(request=None, responses=WorldSerializer)
    def post(self, request: Request, pk: int) -> Response:
        version = get_object_or_404(versions_visible(user=request.user), pk=pk)
        world = services.world_remix(version=version, owner=request.user)
        return Response(WorldSerializer(world, context={"request": request}).data, status=status.HTTP_201_CREATED)


class ContentImportApi(APIView):
    """Upload a card (PNG or JSON), a lorebook (World Info or lorebook_v3), a Twee 3 story or a cartridge."""

    permission_classes = [CanCreate]
    parser_classes = [MultiPartParser]

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField()
        world = serializers.IntegerField(
            required=False, min_value=1, max_value=2**63 - 1, help_text="attach to this world of yours"
        )

    @extend_schema(request={"multipart/form-data": InputSerializer}, responses={201: dict})
    def post(self, request: Request) -> Response:
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        upload = given.validated_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            raise serializers.ValidationError({"file": f"the file is over {MAX_IMPORT_BYTES // 1048576} MiB"})
        world = None
        if "world" in given.validated_data:
            world = get_object_or_404(World, pk=given.validated_data["world"], owner=request.user)
        created = content_import(data=upload.read(), owner=request.user, world=world)
        return Response({"created": created}, status=status.HTTP_201_CREATED)


class ContentExportApi(APIView):
    """Download one of your characters, lorebooks, stories or worlds in a format other tools read."""

    permission_classes = [CanCreate]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "file_format", str, description=", ".join(sorted({f for fs in EXPORT_FORMATS.values() for f in fs}))
            )
        ],
        responses={(200, "application/octet-stream"): bytes},
    )
    def get(self, request: Request, kind: str, pk: int) -> HttpResponse:
        if kind not in EXPORT_MODELS:
            raise Http404
        owner_path = "world__owner" if kind == "story" else "owner"
        content = get_object_or_404(EXPORT_MODELS[kind], pk=pk, **{owner_path: request.user})
        export_format = request.query_params.get("file_format", EXPORT_FORMATS[kind][0])
        try:
            export = content_export(kind=kind, content=content, export_format=export_format)
        except ValueError as error:
            raise serializers.ValidationError({"file_format": str(error)}) from None
        response = HttpResponse(export.data, content_type=export.content_type)
        response["Content-Disposition"] = f'attachment; filename="{export.filename}"'
        return response
