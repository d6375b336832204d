"""Memory pages: the characters that remember a player, and what each remembers, to pin, edit or forget."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.roles import PLAY
from memories import selectors, services
from memories.forms import MemoryTextForm
from worlds.selectors import world_titles_casting

player_only = permission_required(PLAY, raise_exception=True)
MEMORIES_PER_PAGE = 100


@login_required
@player_only
def remembered_by(request: HttpRequest) -> HttpResponse:
    acquaintances = list(selectors.acquaintances_remembering(player=request.user))
    # Two characters may share a name: the worlds they are met in tell them apart.
    worlds = world_titles_casting(character_ids=[acquaintance.character_id for acquaintance in acquaintances])
    listed = [(acquaintance, worlds[acquaintance.character_id]) for acquaintance in acquaintances]
    return render(request, "memories/remembered_by.html", {"acquaintances": listed})


@login_required
@player_only
def character_memories(request: HttpRequest, character_id: int) -> HttpResponse:
    acquaintance = selectors.acquaintance_for_page(player=request.user, character_id=character_id)
    page = Paginator(selectors.memories_listed(acquaintance=acquaintance), MEMORIES_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "character": acquaintance.character,
        "worlds": world_titles_casting(character_ids=[character_id])[character_id],
        "page": page,
        "editable": acquaintance.character.players_can_edit_memories,
        "add_form": MemoryTextForm(),
    }
    return render(request, "memories/character.html", context)


def text_posted(request: HttpRequest, refused: str) -> str | None:
    """The posted memory text, or None after telling the player why it was refused."""
    form = MemoryTextForm(request.POST)
    if form.is_valid():
        return form.cleaned_data["text"]
    for message in form.errors.get("text", []):
        messages.error(request, f"{refused}: {message}")
    return None


def changed(
    request: HttpRequest, character_id: int, action: Callable[..., object], done: str, **arguments: object
) -> HttpResponse:
    """Run a player's change to a memory, say what happened or why not, and go back to the list.

    A PermissionDenied (the creator does not allow changes) is left to become the 403 page.
    """
    try:
        action(player=request.user, **arguments)
    except ValidationError as error:
        for message in error.messages:
            messages.error(request, f"Not changed: {message}")
    else:
        messages.success(request, done)
    return redirect("memories:character", character_id)


@login_required
@player_only
@require_POST
def memory_add(request: HttpRequest, character_id: int) -> HttpResponse:
    acquaintance = selectors.acquaintance_for_page(player=request.user, character_id=character_id)
    text = text_posted(request, "Not added")
    if text is None:
        return redirect("memories:character", character_id)
    done = f"{acquaintance.character.name} will always remember that."
    return changed(request, character_id, services.memory_add_pinned, done, character=acquaintance.character, text=text)


@login_required
@player_only
@require_POST
def memory_pin(request: HttpRequest, character_id: int, memory_id: int) -> HttpResponse:
    memory = selectors.memory_for_change(player=request.user, character_id=character_id, memory_id=memory_id)
    pinned = request.POST.get("pinned") != "no"
    done = "Pinned: it is always remembered." if pinned else "Unpinned."
    return changed(request, character_id, services.memory_pin, done, memory=memory, pinned=pinned)


@login_required
@player_only
@require_POST
def memory_edit(request: HttpRequest, character_id: int, memory_id: int) -> HttpResponse:
    memory = selectors.memory_for_change(player=request.user, character_id=character_id, memory_id=memory_id)
    text = text_posted(request, "Not changed")
    if text is None:
        return redirect("memories:character", character_id)
    return changed(request, character_id, services.memory_edit, "Changed.", memory=memory, text=text)


@login_required
@player_only
@require_POST
def memory_delete(request: HttpRequest, character_id: int, memory_id: int) -> HttpResponse:
    memory = selectors.memory_for_change(player=request.user, character_id=character_id, memory_id=memory_id)
    return changed(request, character_id, services.memory_delete, "Forgotten.", memory=memory)
