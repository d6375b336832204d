"""Gallery pages: home, categories, search, a world, a creator, likes and follows, content settings."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST

from accounts.models import User
from accounts.roles import CREATE
from accounts.selectors import content_settings_of, sees_mature
from accounts.services import content_settings_update
from common.images import image_response
from gallery import selectors, services
from gallery.events import world_page_shown
from gallery.forms import BrowseForm, ContentSettingsForm
from gallery.models import Listing
from gallery.throttles import search_wait_seconds
from worlds.categories import CATEGORY_BLURBS, Category
from worlds.published import published_world

# How long a rendered list (the home page's rows, a category's or a search's cards) is reused at most. Changes
# to the listings file the renderings under a new version at once (gallery.services.listings_changed); this
# bounds what is not counted as a change: play counts and the trending order plays feed.
LIST_SECONDS = 30


@dataclass(frozen=True)
class RenderedList:
    """A list's cards as HTML, and whether it had any (the page around it says so when not)."""

    html: str
    has_items: bool


def list_rendered(request: HttpRequest, render_list: Callable[[], RenderedList]) -> RenderedList:
    """The list this URL shows, rendered once and shared by everyone who may see the same worlds.

    A list's cards hold nothing of the person who asked (no name, no likes, no form token); what they may
    see differs only in mature worlds, so that is part of the key, with the path and query string the list
    comes from. The page around the list, with the person's name, is rendered for each request.
    """
    address = hashlib.sha256(request.get_full_path().encode()).hexdigest()
    mature = int(sees_mature(user=request.user))
    key = f"gallery:list:{selectors.listings_version()}:{mature}:{address}"
    rendered = cache.get(key)
    if rendered is None:
        rendered = render_list()
        cache.set(key, rendered, LIST_SECONDS)
    return rendered


def home(request: HttpRequest) -> HttpResponse:
    categories = [(category, CATEGORY_BLURBS[category]) for category in Category]

    def rows_rendered() -> RenderedList:
        rows = selectors.home_rows(user=request.user)
        # While the whole gallery fits in one row, Trending, New and Top would be the same worlds three times.
        all_in_one_row = len(rows["trending"]) < selectors.HOME_ROW_SIZE
        html = render_to_string("gallery/_home_rows.html", {"rows": rows, "all_in_one_row": all_in_one_row})
        return RenderedList(html=html, has_items=bool(rows["trending"]))

    rows = list_rendered(request, rows_rendered)
    return render(request, "gallery/home.html", {"categories": categories, "rows": rows})


def browse(request: HttpRequest, *, category: Category | None, template: str, extra: dict[str, object]) -> HttpResponse:
    """A list of listings from the query string: a search when it has words, else a sorted browse."""
    form = BrowseForm(request.GET)
    if not form.is_valid():
        errors = [f"{form.fields[name].label or name.title()}: {' '.join(said)}" for name, said in form.errors.items()]
        return refused(request, template, extra, form, errors, status=400)
    values = form.values(request.GET.getlist("tag"))
    query = form.cleaned_data["q"].strip()
    chosen_category = category or form.cleaned_data["category"] or None
    wait = search_wait_seconds(request) if query else None
    if wait is not None:
        message = f"Too many searches from your address: try again in {wait} seconds, or sign in to search freely."
        return refused(request, template, extra, form, [message], status=429, headers={"Retry-After": str(wait)})

    def page_rendered() -> RenderedList:
        if query:
            page = selectors.listings_search(
                user=request.user,
                query=query,
                category=chosen_category,
                tags=values["tags"],
                cursor=values["cursor"],
                size=values["size"],
            )
        else:
            page = selectors.listings_browse(user=request.user, category=chosen_category, **values)
        next_query = request.GET.copy()
        next_query["cursor"] = page.next_cursor or ""
        context = {
            "page": page,
            "next_query": next_query.urlencode() if page.next_cursor else "",
            "empty_message": extra["empty_message"],
        }
        return RenderedList(html=render_to_string("gallery/_list.html", context), has_items=bool(page.items))

    try:
        results = list_rendered(request, page_rendered)
    except selectors.BadCursor:
        raise Http404("No such page of the gallery") from None
    except selectors.SearchTooSlow as error:
        return refused(request, template, extra, form, [f"Not searched: {error}. Try again in a moment."], status=503)
    context = {
        "results": results,
        "form": form,
        "query": query,
        "sort": values["sort"],
        "tags": values["tags"],
        "popular_tags": selectors.tags_popular(user=request.user, category=chosen_category),
    }
    return render(request, template, context | extra)


def refused(
    request: HttpRequest,
    template: str,
    extra: dict[str, object],
    form: BrowseForm,
    errors: list[str],
    *,
    status: int,
    headers: dict[str, str] | None = None,
) -> HttpResponse:
    """The list page with no results and each reason shown as a message (the page shows messages)."""
    for error in errors:
        messages.error(request, error)
    context = {
        "results": RenderedList(html="", has_items=False),
        "form": form,
        "query": "",
        "tags": [],
        "sort": "",
        "popular_tags": [],
    }
    response = render(request, template, context | extra, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def category_page(request: HttpRequest, category: str) -> HttpResponse:
    if category not in Category.values:
        raise Http404("No such gallery category")
    chosen = Category(category)
    return browse(
        request,
        category=chosen,
        template="gallery/category.html",
        extra={
            "category": chosen,
            "blurb": CATEGORY_BLURBS[chosen],
            "empty_message": "Nothing here matches. Try other words or fewer tags.",
        },
    )


def search(request: HttpRequest) -> HttpResponse:
    extra = {"empty_message": "Nothing matches. Try other words."}
    return browse(request, category=None, template="gallery/search.html", extra=extra)


def url_or_none(name: str, *args: object) -> str | None:
    """A URL of an app above the gallery (play), or None where it is not installed: the gallery needs none."""
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return None


def world_page(request: HttpRequest, slug: str) -> HttpResponse:
    listing = selectors.listing_for_page(user=request.user, slug=slug)
    is_creator = request.user.is_authenticated and request.user.has_perm(CREATE)
    context = {
        "listing": listing,
        "characters": published_world(listing.version).characters,
        "versions": selectors.versions_public(listing=listing),
        "remixed_from": selectors.remixed_from_visible(user=request.user, listing=listing),
        "play_url": url_or_none("play:play", listing.world.slug),
        "remix_url": url_or_none("worlds:remix", listing.version_id)
        if is_creator and listing.creator_id != request.user.pk
        else None,
        "liked": getattr(listing, "liked", False),
        "sections": [
            section
            for _, section in world_page_shown.send(sender=Listing, listing=listing, user=request.user)
            if section is not None
        ],
    }
    return render(request, "gallery/world.html", context)


def world_image(request: HttpRequest, slug: str) -> FileResponse:
    """The world's cover, or the preview frame drawn when it was checked; the URL carries the version."""
    listing = selectors.listing_for_page(user=request.user, slug=slug)
    name = listing.cover or listing.thumbnail
    if not name or not default_storage.exists(name):
        raise Http404("This world has no image yet")
    response = image_response(name)
    response["Cache-Control"] = "public, max-age=86400"
    return response


@login_required
@require_POST
def world_like(request: HttpRequest, slug: str) -> HttpResponse:
    listing = selectors.listing_for_page(user=request.user, slug=slug)
    if request.POST.get("like") == "no":
        services.listing_unlike(user=request.user, listing=listing)
    else:
        services.listing_like(user=request.user, listing=listing)
    return redirect("gallery:world", slug)


def creator_page(request: HttpRequest, username: str) -> HttpResponse:
    profile = selectors.creator_profile(user=request.user, username=username)
    return render(request, "gallery/creator.html", {"profile": profile})


@login_required
@require_POST
def creator_follow(request: HttpRequest, username: str) -> HttpResponse:
    creator = get_object_or_404(User, username=username, is_active=True)
    if request.POST.get("follow") == "no":
        services.creator_unfollow(follower=request.user, creator=creator)
    else:
        services.creator_follow(follower=request.user, creator=creator)
    return redirect("gallery:creator", username)


@login_required
def content_settings(request: HttpRequest) -> HttpResponse:
    profile = content_settings_of(user=request.user)
    initial = {"show_mature": profile.show_mature, "adult_confirmed": profile.adult_confirmed_at is not None}
    form = ContentSettingsForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        content_settings_update(user=request.user, **form.cleaned_data)
        messages.success(request, "Your content settings are saved.")
        return redirect("gallery:settings")
    return render(request, "gallery/settings.html", {"form": form})
