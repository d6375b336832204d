"""The authoring API: a creator's working copies (private), published versions (read-only), publish, remix.

Plain CRUD goes through ModelViewSets scoped to the caller's own rows, so another creator's drafts answer
404. Every write goes through worlds.services, so model validation gives the same messages as the studio.
Nested rows (clues, lore entries, branches, beats) are written with their parent and replace its old ones.
"""

from __future__ import annotations

from typing import Any, ClassVar

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
    """A serializer whose nested lists (declared in `children`) are saved with the parent by a service."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.JSONField: NotNullJSONField,
    }
    children: ClassVar[tuple[str, ...]] = ()

    def create(self, validated_data: dict[str, Any]) -> Model:
        return self.save_with_children(self.Meta.model(**self.owner_of(validated_data)), validated_data)

    def update(self, instance: Model, validated_data: dict[str, Any]) -> Model:
        return self.save_with_children(instance, validated_data)

    def save_with_children(self, instance: Model, values: dict[str, Any]) -> Model:
        children = {name: values.pop(name) for name in self.children if name in values}
        relations = {name: values.pop(name) for name in list(values) if self.is_many_to_many(name)}
        services.content_save_with_children(instance, values, children)
        for name, related in relations.items():
            getattr(instance, name).set(related)
        return instance

    def owner_of(self, validated_data: dict[str, Any]) -> dict[str, Any]:
        has_owner = any(field.name == "owner" for field in self.Meta.model._meta.concrete_fields)
        return {"owner": self.context["request"].user} if has_owner else {}

    def is_many_to_many(self, name: str) -> bool:
        return any(field.name == name for field in self.Meta.model._meta.many_to_many)

    def own(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        user = self.context["request"].user
        # The schema view builds these serializers for anonymous visitors too; they own nothing.
        return queryset.filter(owner=user) if user.is_authenticated else queryset.none()


class LorebookSerializer(OwnedSerializer):
    children = ("entries",)
    entries = LoreEntrySerializer(many=True, required=False)

    class Meta:
        model = Lorebook
        exclude = ["owner"]


class CharacterSerializer(OwnedSerializer):
    children = ("clues",)
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

    def create(self, validated_data: dict[str, Any]) -> World:
        characters, lorebooks = validated_data.pop("characters", []), validated_data.pop("lorebooks", [])
        world = services.world_create(owner=self.context["request"].user, **validated_data)
        world.characters.set(characters)
        world.lorebooks.set(lorebooks)
        return world

    def update(self, world: World, validated_data: dict[str, Any]) -> World:
        relations = {name: validated_data.pop(name) for name in ("characters", "lorebooks") if name in validated_data}
        services.world_update(world=world, **validated_data)
        for name, related in relations.items():
            getattr(world, name).set(related)
        return world


class WorldPartSerializer(OwnedSerializer):
    """Hooks and stories belong to one of the caller's worlds."""

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        fields["world"].queryset = self.own(World.objects.all())
        return fields


class HookSerializer(WorldPartSerializer):
    children = ("branches",)
    branches = HookBranchSerializer(many=True, required=False)

    class Meta:
        model = Hook
        fields = "__all__"


class StorySerializer(WorldPartSerializer):
    children = ("beats",)
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
    """CRUD over the caller's own rows; everyone else's are invisible (404)."""

    permission_classes = [CanCreate]
    owner_path = "owner"

    def get_queryset(self) -> QuerySet[Any]:
        model = self.get_serializer_class().Meta.model
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular reading the types, with no caller
            return model.objects.none()
        return model.objects.filter(**{self.owner_path: self.request.user})


class LorebookViewSet(OwnedViewSet):
    serializer_class = LorebookSerializer


class CharacterViewSet(OwnedViewSet):
    serializer_class = CharacterSerializer


class HookViewSet(OwnedViewSet):
    serializer_class = HookSerializer
    owner_path = "world__owner"


class StoryViewSet(OwnedViewSet):
    serializer_class = StorySerializer
    owner_path = "world__owner"


class WorldViewSet(OwnedViewSet):
    serializer_class = WorldSerializer

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
