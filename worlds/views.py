"""Studio pages, for creators: authoring worlds, characters, lorebooks, hooks and stories, and publishing them.

Every page shows only the signed-in creator's own working copies; anyone else's answers 404, so a page never
confirms that someone else's draft exists. Published versions are public and can be remixed by others.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.db import models
from django.db.models import OuterRef, Subquery
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.models import User
from accounts.roles import CREATE
from common.images import image_response
from inference.engine import preview_jpeg
from inference.language.embedding import default_embedder
from worlds import imports
from worlds.exports import EXPORT_FORMATS, EXPORT_MODELS
from worlds.forms import (
    PLAYTEST_BUDGET_SECONDS,
    TRIGGER_INPUTS,
    CharacterForm,
    ClueFormSet,
    HookBranchFormSet,
    HookForm,
    HookPlaytestForm,
    ImportForm,
    LorebookForm,
    LoreEntryFormSet,
    StudioForm,
    StudioInlineFormSet,
    WorldForm,
    errors_summarised,
    hook_playtest,
    service_errors_add,
)
from worlds.models import Character, Hook, Lorebook, ReviewStatus, Story, World, WorldVersion
from worlds.selectors import (
    characters_owned,
    version_document_for,
    versions_visible,
    world_problems,
    world_review_status,
    worlds_owned,
    worlds_review_status,
)
from worlds.services import world_publish, world_remix
from worlds.story_forms import BeatFormSet, StoryForm

# A world spec is a few hundred characters; anything far longer is not one.
PREVIEW_PARAMETERS_MAX_LENGTH = 10_000

PAGE_NAMES: dict[type[models.Model], str] = {
    World: "worlds:world",
    Character: "worlds:character",
    Lorebook: "worlds:lorebook",
    Hook: "worlds:hook",
    Story: "worlds:story",
}


def creator_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    return login_required(permission_required(CREATE, raise_exception=True)(view))


def owned(model: type[models.Model], pk: int, user: User, owner_path: str = "owner") -> Any:
    """The row if `user` owns it (through `owner_path`), else 404."""
    return get_object_or_404(model, pk=pk, **{owner_path: user})


def versions_remixable(*, user: User) -> list[WorldVersion]:
    """The latest approved version of each world someone else made, newest first."""
    approved = WorldVersion.objects.filter(status=ReviewStatus.APPROVED)
    latest = approved.filter(world=OuterRef("world")).order_by("-number").values("number")[:1]
    versions = approved.filter(number=Subquery(latest)).exclude(world__owner=user)
    return list(versions.select_related("world__owner").order_by("-published_at")[:20])


@creator_required
def studio(request: HttpRequest) -> HttpResponse:
    worlds = list(worlds_owned(owner=request.user))
    statuses = worlds_review_status(worlds=worlds)
    return render(
        request,
        "worlds/studio.html",
        {
            "worlds": [(world, statuses[world.pk]) for world in worlds],
            "characters": characters_owned(owner=request.user),
            "lorebooks": Lorebook.objects.filter(owner=request.user).order_by("name"),
            "remixable": versions_remixable(user=request.user),
        },
    )


def edit_page(
    request: HttpRequest,
    instance: models.Model,
    form_class: type[StudioForm],
    template: str,
    *,
    formset_class: type[StudioInlineFormSet] | None = None,
    form_options: dict[str, Any] | None = None,
    context: dict[str, Any] | None = None,
) -> HttpResponse:
    """Create or edit `instance` and its rows; a valid POST saves everything at once and shows its page.

    An invalid POST shows the page again with the creator's input kept and every error listed at the top.
    """
    data = (request.POST, request.FILES) if request.method == "POST" else ()
    is_new = instance.pk is None
    kind = instance._meta.verbose_name
    # Taken before validation, which writes the posted (maybe blank) values onto the instance.
    heading = f"New {kind}" if is_new else str(instance)
    form = form_class(*data, instance=instance, **(form_options or {}))
    # Every page of a saved world (its own, its hooks' and stories') says where the world stands with review.
    world = instance if isinstance(instance, World) else getattr(instance, "world", None)
    review_status = world_review_status(world=world) if world is not None and world.pk else None
    formsets = [formset_class(*data, instance=instance)] if formset_class else []
    if data and all([form.is_valid(), *[formset.is_valid() for formset in formsets]]):
        children = [row for formset in formsets for row in formset.rows_kept()]
        try:
            saved = form.save_through_service(owner=request.user, children=children)
        except ValidationError as error:
            service_errors_add(form, error)
        else:
            messages.success(request, f"Saved “{saved}”.")
            return redirect(reverse(PAGE_NAMES[type(saved)], args=[saved.pk]))
    return render(
        request,
        template,
        {
            "form": form,
            "formsets": formsets,
            "content": instance,
            "is_new": is_new,
            "kind": kind,
            "heading": heading,
            "errors": errors_summarised(form, formsets),
            "exports": [] if is_new else export_links(instance),
            "review_status": review_status,
            **(context or {}),
        },
    )


@creator_required
def world_edit(request: HttpRequest, world_id: int | None = None) -> HttpResponse:
    world = owned(World, world_id, request.user) if world_id else World(owner=request.user)
    context = {}
    if world_id:
        context = {
            "hooks": world.hooks.order_by("name"),
            "stories": world.stories.order_by("title"),
            "problems": world_problems(world=world),
            "versions": world.versions.defer("document"),
        }
    return edit_page(
        request, world, WorldForm, "worlds/world.html", form_options={"owner": request.user}, context=context
    )


@creator_required
def character_edit(request: HttpRequest, character_id: int | None = None) -> HttpResponse:
    character = owned(Character, character_id, request.user) if character_id else Character(owner=request.user)
    return edit_page(
        request,
        character,
        CharacterForm,
        "worlds/character.html",
        formset_class=ClueFormSet,
        form_options={"owner": request.user},
    )


@creator_required
def lorebook_edit(request: HttpRequest, lorebook_id: int | None = None) -> HttpResponse:
    lorebook = owned(Lorebook, lorebook_id, request.user) if lorebook_id else Lorebook(owner=request.user)
    return edit_page(request, lorebook, LorebookForm, "worlds/lorebook.html", formset_class=LoreEntryFormSet)


@dataclass(frozen=True)
class OutcomeBar:
    """One row of a hook's chart of outcomes, in the SVG's own units (see hook.html)."""

    label: str
    count: int
    y: int  # the row's top
    width: int  # the bar's length, the longest bar being CHART_BAR_MAX


CHART_BAR_MAX = 320  # of the 400 units the chart is wide, leaving room for the count after the longest bar
CHART_ROW_HEIGHT = 36  # a label line above a bar


def hook_outcome_bars(hook: Hook) -> list[OutcomeBar]:
    """How often each branch was taken, and the fallback narrated, as bars scaled to the most frequent."""
    counts = [(f"branch {branch.name}", branch.times_chosen) for branch in hook.branches.all()]
    counts.append(("no branch fit (fallback)", hook.times_fallen_back))
    most = max(count for _, count in counts) or 1
    return [
        OutcomeBar(label, count, index * CHART_ROW_HEIGHT, round(CHART_BAR_MAX * count / most))
        for index, (label, count) in enumerate(counts)
    ]


@creator_required
def hook_edit(request: HttpRequest, hook_id: int | None = None, world_id: int | None = None) -> HttpResponse:
    if hook_id:
        hook = owned(Hook, hook_id, request.user, "world__owner")
    else:
        hook = Hook(world=owned(World, world_id, request.user))
    context: dict[str, Any] = {"trigger_inputs": TRIGGER_INPUTS}
    if hook_id:
        bars = hook_outcome_bars(hook)
        context |= {"outcome_bars": bars, "chart_height": len(bars) * CHART_ROW_HEIGHT}
        playtest = HookPlaytestForm(request.GET if "inputs" in request.GET else None)
        context["playtest"] = playtest
        if playtest.is_valid():
            # MiniLM loads on the first playtest in this process (seconds), then stays for every later one.
            inputs = playtest.cleaned_data["inputs"]
            results = hook_playtest(hook, inputs, embedder=default_embedder(), budget_seconds=PLAYTEST_BUDGET_SECONDS)
            context["playtest_results"] = results
            if len(results) < len(inputs) and hook.branches.exists():  # the budget ran out
                playtest.add_error(
                    "inputs",
                    f"stopped after {len(results)} of {len(inputs)} inputs: a playtest runs for at most "
                    f"{PLAYTEST_BUDGET_SECONDS:g} seconds",
                )
    return edit_page(request, hook, HookForm, "worlds/hook.html", formset_class=HookBranchFormSet, context=context)


@creator_required
def story_edit(request: HttpRequest, story_id: int | None = None, world_id: int | None = None) -> HttpResponse:
    if story_id:
        story = owned(Story, story_id, request.user, "world__owner")
    else:
        story = Story(world=owned(World, world_id, request.user))
    return edit_page(request, story, StoryForm, "worlds/story.html", formset_class=BeatFormSet)


def preview_parameters(text: str | None) -> dict[str, Any]:
    """World spec keys to try in a preview, from the `params` query; ValueError says what is wrong."""
    if not text:
        return {}
    if len(text) > PREVIEW_PARAMETERS_MAX_LENGTH:
        raise ValueError(f"params is longer than {PREVIEW_PARAMETERS_MAX_LENGTH} characters")
    try:
        parameters = json.loads(text)
    except json.JSONDecodeError:
        raise ValueError("params must be JSON") from None
    if not isinstance(parameters, dict):
        raise ValueError("params must be a JSON object of world spec keys")
    return parameters


@creator_required
@require_GET
def world_preview(request: HttpRequest, world_id: int) -> HttpResponse:
    """The world's first frame; `params` overrides saved engine parameters, so the edit page previews input."""
    world = owned(World, world_id, request.user)
    try:
        image = preview_jpeg(world.engine_parameters | preview_parameters(request.GET.get("params")))
    except ValueError as error:
        return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")
    return HttpResponse(image, content_type="image/jpeg", headers={"Cache-Control": "private, no-cache"})


@creator_required
@require_GET
def world_thumbnail(request: HttpRequest, world_id: int) -> HttpResponse:
    """The studio list's picture of a world: its cover if it has one, else its first frame (what the gallery
    shows too: the cover, or the frame the preview check drew from the same engine parameters)."""
    world = owned(World, world_id, request.user)
    if world.cover_image and default_storage.exists(world.cover_image.name):
        response: HttpResponse = image_response(world.cover_image.name)
    else:
        try:
            image = preview_jpeg(world.engine_parameters, width=192, height=108)
        except ValueError:
            raise Http404("This world's engine parameters draw no frame") from None
        response = HttpResponse(image, content_type="image/jpeg")
    # The URL carries the world's last change, so a page after an edit asks for the new picture.
    response["Cache-Control"] = "private, max-age=86400"
    return response


@creator_required
@require_POST
def publish(request: HttpRequest, world_id: int) -> HttpResponse:
    world = owned(World, world_id, request.user)
    try:
        version = world_publish(world=world, by=request.user)
    except ValidationError as error:
        for message in error.messages:
            messages.error(request, f"Not published: {message}")
    else:
        version.refresh_from_db(fields=["status"])  # a subscriber may have decided it already
        if version.status == ReviewStatus.APPROVED:
            messages.success(request, f"Published version {version.number} of “{world.title}”: it is live.")
        else:
            messages.success(
                request,
                f"Submitted version {version.number} of “{world.title}” for review: "
                "it goes live once a moderator approves it.",
            )
    return redirect("worlds:world", world.pk)


@creator_required
def version_detail(request: HttpRequest, version_id: int) -> HttpResponse:
    version = get_object_or_404(versions_visible(user=request.user).select_related("world__owner"), pk=version_id)
    return render(
        request,
        "worlds/version.html",
        {
            "version": version,
            "document": version_document_for(version=version, user=request.user),
            "can_remix": version.world.owner_id != request.user.pk,
        },
    )


@creator_required
@require_POST
def remix(request: HttpRequest, version_id: int) -> HttpResponse:
    # Creators remix other people's worlds; their own they simply edit.
    version = get_object_or_404(versions_visible(user=request.user).exclude(world__owner=request.user), pk=version_id)
    try:
        world = world_remix(version=version, owner=request.user)
    except ValidationError as error:
        for message in error.messages:
            messages.error(request, f"Not remixed: {message}")
        return redirect("worlds:version", version.pk)
    messages.success(request, f"Remixed “{world.title}”: this copy is yours to edit.")
    return redirect("worlds:world", world.pk)


def export_links(content: models.Model) -> list[tuple[str, str]]:
    """(label, URL) for each file the content can be exported as; the export API serves the download."""
    kind = next((name for name, model in EXPORT_MODELS.items() if isinstance(content, model)), None)
    if kind is None:
        return []
    url = reverse("content-export", args=[kind, content.pk])
    return [
        (EXPORT_LABELS[export_format], f"{url}?file_format={export_format}") for export_format in EXPORT_FORMATS[kind]
    ]


EXPORT_LABELS = {
    "card-png": "Character card (PNG)",
    "card-json": "Character card (JSON)",
    "lorebook": "Lorebook (lorebook_v3 JSON)",
    "world-info": "SillyTavern World Info (JSON)",
    "twee": "Twine story (Twee 3)",
    "cartridge": "World cartridge (zip)",
}


@creator_required
@require_http_methods(["GET", "POST"])
def import_content(request: HttpRequest) -> HttpResponse:
    worlds = worlds_owned(owner=request.user)
    error = None
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES, owner=request.user)
        if not form.is_valid():
            error = form.problems()
        else:
            upload, world = form.cleaned_data["file"], form.cleaned_data["world"]
            try:
                created = imports.content_import(data=upload.read(), owner=request.user, world=world)
            except ValidationError as refusal:
                error = " ".join(refusal.messages)
            else:
                names = ", ".join(f"{item['type']} “{item['name']}”" for item in created)
                messages.success(request, f"Imported {names}.")
                return redirect("worlds:studio")
    return render(request, "worlds/import.html", {"worlds": worlds, "error": error}, status=400 if error else 200)
