"""The gallery's JSON API, mirroring its pages: lists and search by cursor, home rows, a world, a creator,
likes, follows and content settings."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import User
from accounts.selectors import content_settings_of
from accounts.services import content_settings_update
from gallery import selectors, services
from gallery.models import Listing
from gallery.throttles import AnonymousSearchThrottle
from gallery.views import url_or_none
from worlds.categories import Category
from worlds.published import published_world


class ListingCardSerializer(serializers.ModelSerializer):
    """A listed world as a gallery card shows it."""

    creator = serializers.CharField(source="creator.username")
    tags = serializers.SerializerMethodField()
    image_url = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = Listing
        fields = [
            "slug",
            "title",
            "logline",
            "category",
            "content_rating",
            "creator",
            "tags",
            "play_count",
            "like_count",
            "listed_at",
            "version",
            "image_url",
            "url",
        ]

    def get_tags(self, listing: Listing) -> list[str]:
        return listing.tag_names

    def get_image_url(self, listing: Listing) -> str | None:
        if not (listing.cover or listing.thumbnail):
            return None
        return f"{reverse('gallery:world_image', args=[listing.slug])}?v={listing.version_id}"

    def get_url(self, listing: Listing) -> str:
        return reverse("gallery:world", args=[listing.slug])


class SearchUnavailable(APIException):
    """A search the database cancelled for running too long: the site is busy, not the request wrong."""

    status_code = 503
    default_code = "search_too_slow"


class PageOutputSerializer(serializers.Serializer):
    results = ListingCardSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class GalleryWorldListApi(APIView):
    """Listed worlds, by category, tags and sort, or ranked by search words; a cursor pages on (size 1 to 100)."""

    permission_classes = [permissions.AllowAny]
    throttle_classes = [AnonymousSearchThrottle]

    class InputSerializer(serializers.Serializer):
        q = serializers.CharField(max_length=selectors.MAX_QUERY_LENGTH, required=False, allow_blank=True)
        category = serializers.ChoiceField(choices=Category.choices, required=False)
        tag = serializers.ListField(child=serializers.CharField(max_length=40), required=False, max_length=5)
        sort = serializers.ChoiceField(choices=[sort.value for sort in selectors.Sort], default="trending")
        cursor = serializers.CharField(max_length=400, required=False)
        page_size = serializers.IntegerField(min_value=1, max_value=selectors.MAX_PAGE_SIZE, default=20)

    @extend_schema(operation_id="gallery_worlds_list", parameters=[InputSerializer], responses=PageOutputSerializer)
    def get(self, request: Request) -> Response:
        given = self.InputSerializer(data={**request.query_params.dict(), "tag": request.query_params.getlist("tag")})
        given.is_valid(raise_exception=True)
        data = given.validated_data
        common = {
            "user": request.user,
            "category": data.get("category"),
            "tags": data.get("tag", []),
            "cursor": data.get("cursor"),
            "size": data["page_size"],
        }
        try:
            if data.get("q", "").strip():
                page = selectors.listings_search(query=data["q"], **common)
            else:
                page = selectors.listings_browse(sort=selectors.Sort(data["sort"]), **common)
        except selectors.BadCursor as error:
            raise serializers.ValidationError({"cursor": str(error)}) from None
        except selectors.SearchTooSlow as error:
            raise SearchUnavailable(f"{error}: try again in a moment, or with other words") from None
        return Response(PageOutputSerializer({"results": page.items, "next_cursor": page.next_cursor}).data)


class GalleryHomeApi(APIView):
    """The home page's rows: featured by moderators, trending, new and top."""

    permission_classes = [permissions.AllowAny]

    class OutputSerializer(serializers.Serializer):
        featured = ListingCardSerializer(many=True)
        trending = ListingCardSerializer(many=True)
        new = ListingCardSerializer(many=True)
        top = ListingCardSerializer(many=True)

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request) -> Response:
        return Response(self.OutputSerializer(selectors.home_rows(user=request.user)).data)


class GalleryWorldDetailApi(APIView):
    """One listed world: its card, description, characters, public versions and what it was remixed from."""

    permission_classes = [permissions.AllowAny]

    class OutputSerializer(ListingCardSerializer):
        description = serializers.CharField()
        characters = serializers.SerializerMethodField()
        versions = serializers.SerializerMethodField()
        remixed_from = serializers.SerializerMethodField()
        liked = serializers.SerializerMethodField()
        play_url = serializers.SerializerMethodField()

        class Meta(ListingCardSerializer.Meta):
            fields = [
                *ListingCardSerializer.Meta.fields,
                "description",
                "characters",
                "versions",
                "remixed_from",
                "liked",
                "play_url",
            ]

        def get_characters(self, listing: Listing) -> list[dict[str, str]]:
            return [
                {"name": character.name, "greeting": character.greeting}
                for character in published_world(listing.version).characters
            ]

        def get_versions(self, listing: Listing) -> list[dict[str, Any]]:
            return [
                {"id": version.pk, "number": version.number, "published_at": version.published_at}
                for version in selectors.versions_public(listing=listing)
            ]

        def get_remixed_from(self, listing: Listing) -> dict[str, str] | None:
            original = selectors.remixed_from_visible(user=self.context["request"].user, listing=listing)
            return {"slug": original.slug, "title": original.title} if original else None

        def get_liked(self, listing: Listing) -> bool:
            return getattr(listing, "liked", False)

        def get_play_url(self, listing: Listing) -> str | None:
            return url_or_none("play:play", listing.slug)

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request, slug: str) -> Response:
        listing = selectors.listing_for_page(user=request.user, slug=slug)
        return Response(self.OutputSerializer(listing, context={"request": request}).data)


class WorldLikeApi(APIView):
    """POST likes a listed world, DELETE takes the like back; both are safe to repeat."""

    permission_classes = [permissions.IsAuthenticated]

    class OutputSerializer(serializers.Serializer):
        liked = serializers.BooleanField()
        like_count = serializers.IntegerField()

    @extend_schema(request=None, responses=OutputSerializer)
    def post(self, request: Request, slug: str) -> Response:
        return self.answer(request, slug, like=True)

    @extend_schema(request=None, responses=OutputSerializer)
    def delete(self, request: Request, slug: str) -> Response:
        return self.answer(request, slug, like=False)

    def answer(self, request: Request, slug: str, *, like: bool) -> Response:
        listing = selectors.listing_for_page(user=request.user, slug=slug)
        (services.listing_like if like else services.listing_unlike)(user=request.user, listing=listing)
        listing.refresh_from_db(fields=["like_count"])
        return Response(self.OutputSerializer({"liked": like, "like_count": listing.like_count}).data)


class CreatorDetailApi(APIView):
    """A creator's published works and followers."""

    permission_classes = [permissions.AllowAny]

    class OutputSerializer(serializers.Serializer):
        username = serializers.CharField(source="creator.username")
        display_name = serializers.CharField(source="creator.display_name")
        bio = serializers.CharField(source="creator.bio")
        followers = serializers.IntegerField()
        following = serializers.BooleanField()
        works = ListingCardSerializer(many=True)

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request, username: str) -> Response:
        return Response(self.OutputSerializer(selectors.creator_profile(user=request.user, username=username)).data)


class CreatorFollowApi(APIView):
    """POST follows a creator, DELETE unfollows."""

    permission_classes = [permissions.IsAuthenticated]

    class OutputSerializer(serializers.Serializer):
        following = serializers.BooleanField()

    @extend_schema(request=None, responses=OutputSerializer)
    def post(self, request: Request, username: str) -> Response:
        creator = get_object_or_404(User, username=username, is_active=True)
        if creator == request.user:
            raise serializers.ValidationError("you cannot follow yourself")
        services.creator_follow(follower=request.user, creator=creator)
        return Response({"following": True})

    @extend_schema(request=None, responses=OutputSerializer)
    def delete(self, request: Request, username: str) -> Response:
        creator = get_object_or_404(User, username=username)
        services.creator_unfollow(follower=request.user, creator=creator)
        return Response({"following": False})


class ContentSettingsApi(APIView):
    """Whether mature works show: only after opting in and confirming one is an adult."""

    permission_classes = [permissions.IsAuthenticated]

    class InputSerializer(serializers.Serializer):
        show_mature = serializers.BooleanField()
        adult_confirmed = serializers.BooleanField(default=False)

        def validate(self, data: dict[str, bool]) -> dict[str, bool]:
            if data["show_mature"] and not data["adult_confirmed"]:
                raise serializers.ValidationError(
                    {"adult_confirmed": "confirm you are 18 or older to see mature works"}
                )
            return data

    class OutputSerializer(serializers.Serializer):
        show_mature = serializers.BooleanField()
        adult_confirmed_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(responses=OutputSerializer)
    def get(self, request: Request) -> Response:
        return Response(self.OutputSerializer(content_settings_of(user=request.user)).data)

    @extend_schema(request=InputSerializer, responses=OutputSerializer)
    def put(self, request: Request) -> Response:
        given = self.InputSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        profile = content_settings_update(user=request.user, **given.validated_data)
        return Response(self.OutputSerializer(profile).data)
