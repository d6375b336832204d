"""Play pages: start or resume a session of a world, and the player itself."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from accounts.models import User
from accounts.roles import PLAY
from inference.play.host import CONVERSATION
from play import protocol, services
from play.models import PlaySession
from play.selectors import session_role, sessions_open_for, story_so_far, version_playable
from workers.selectors import engine_frame_size
from worlds.categories import Category
from worlds.models import World
from worlds.published import PublishedWorld, published_world


class SignedInRequest(HttpRequest):
    """A request that got past login_required: its user is a User, never anonymous."""

    user: User


@login_required
@permission_required(PLAY, raise_exception=True)
@require_http_methods(["GET", "POST"])
def play(request: SignedInRequest, slug: str) -> HttpResponse:
    world = get_object_or_404(World, slug=slug)
    version = version_playable(world=world, user=request.user)
    if version is None:
        raise Http404("This world has no version you can play yet.")
    if request.method == "POST":
        if published_world(version).world.category == "live":
            session = services.live_session_join(version=version, user=request.user)
        else:
            session = services.session_start(version=version, owner=request.user)
        return redirect("play:session", session_id=session.pk)
    context = {"world": world, "version": version, "open_sessions": sessions_open_for(world=world, user=request.user)}
    return render(request, "play/play.html", context)


@login_required
def session_page(request: SignedInRequest, session_id: str) -> HttpResponse:
    session = get_object_or_404(PlaySession.objects.select_related("version__world"), pk=session_id)
    role = session_role(session=session, user=request.user)
    if role is None:
        raise Http404("No such session.")
    published = published_world(session.version)
    characters = published.characters
    context = {
        "has_story": bool(published.stories),
        "session": session,
        "role": role,
        "world": session.version.world,
        "characters": [character.name for character in characters],
        "participants": [session.owner, *session.participants.all()] if session.is_live else [],
        "conversation": conversation_for(published=published),
        "said_before": story_so_far(session=session, viewer=request.user),
        # Sessions started before characters were met in their scene ran on no engine: a conversation alone.
        "drawn": session.engine != CONVERSATION,
        "frame_size": engine_frame_size(session.engine),
        "is_creator": session.version.world.owner_id == request.user.pk,
        "protocol_constants": protocol.PAGE_CONSTANTS,
    }
    return render(request, "play/session.html", context)


def conversation_for(*, published: PublishedWorld) -> dict[str, str] | None:
    """The character a Characters work is about (their portrait and greeting), or None for another world."""
    if published.world.category != Category.CHARACTERS or not published.characters:
        return None
    character = published.characters[0]
    portrait_url = default_storage.url(character.portrait) if character.portrait else ""
    return {"name": character.name, "greeting": character.greeting, "portrait_url": portrait_url}
