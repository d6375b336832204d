"""Reads about play sessions: who may join, where a session stands in the queue, what a worker needs."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from django.core.cache import cache
from django.db.models import Avg, Count, F, Q, QuerySet

from accounts.models import User
from inference.narrative.prompting import CHARACTER_FIELDS
from inference.narrative.safety import refused_terms
from inference.protocol import NarrativeState, PendingInput, ReplayedInput, SessionOpen, Snapshot, StoryState
from memories.services import memories_recall
from moderation.checks import term_filter_load
from moderation.selectors import safety_terms
from play.models import PlaySession, SessionEvent, SessionStatus
from workers.models import WorkerNode
from workers.selectors import workers_connected
from worlds.formats import active_entries
from worlds.interchange import lorebook_from_document
from worlds.models import Character
from worlds.published import PublishedWorld, published_world

# Newest first: a conversation has no engine tick, so all its snapshots share tick 0 and the row's id, which
# only grows, decides among them.
SNAPSHOTS_NEWEST_FIRST = ("-tick", "-pk")
# When no session has ended yet, guess this long per session for the queue's estimate.
DEFAULT_SESSION_SECONDS = 300


def last_frame_key(session_id: Any) -> str:
    return f"play:last-frame:{session_id}"


def last_frame_seen(*, session: PlaySession) -> int:
    """The newest frame the platform recorded: the cache has it to within LAST_FRAME_EVERY_SECONDS, the row the
    ones snapshots recorded (the worker that sent newer frames replays a reopened session to them itself)."""
    return max(session.last_frame, cache.get(last_frame_key(session.pk), 0))


def session_role(*, session: PlaySession, user: User) -> str | None:
    """ "player", "spectator" or None (may not connect)."""
    if not user.is_authenticated:
        return None
    if session.owner_id == user.pk or session.participants.filter(pk=user.pk).exists():
        return "player"
    if session.is_live and user.has_perm("accounts.play"):
        return "spectator"
    return None


def worker_least_loaded(*, engine: str) -> WorkerNode | None:
    """The connected worker with a free slot for `engine` that runs the fewest sessions, or None."""
    candidates = (
        workers_connected()
        .annotate(running=Count("sessions", filter=Q(sessions__status=SessionStatus.RUNNING)))
        .filter(running__lt=F("slots"))
        .order_by("running", "id")
    )
    return next((worker for worker in candidates if engine in worker.engines), None)


def queue_place(*, session: PlaySession) -> int:
    """1 for the first in line; a session without a queueing time (made outside the services) is last."""
    ahead = PlaySession.objects.filter(status=SessionStatus.QUEUED).exclude(pk=session.pk)
    if session.queued_at is not None:
        ahead = ahead.filter(queued_at__lte=session.queued_at)
    return ahead.count() + 1


def queue_estimated_wait_seconds(*, place: int, engine: str) -> int | None:
    """About how long the session at `place` waits, or None when no connected worker runs `engine`: then no
    estimate is true (one made with a slot that does not exist would promise the same wait forever)."""
    slots = sum(slots for slots, engines in workers_connected().values_list("slots", "engines") if engine in engines)
    if not slots:
        return None
    ended = PlaySession.objects.filter(status=SessionStatus.ENDED).order_by("-last_active_at")[:20]
    average = ended.aggregate(average=Avg(F("last_active_at") - F("created_at")))["average"]
    per_session = average.total_seconds() if average else DEFAULT_SESSION_SECONDS
    return int(place * per_session / slots)


def session_open_message(*, session: PlaySession) -> SessionOpen:
    """What a worker needs to open (or reopen) the session: spec, story, last snapshot, inputs to replay."""
    published = published_world(session.version)
    snapshot = session.snapshots.order_by(*SNAPSHOTS_NEWEST_FIRST).first()
    after = snapshot.sequence if snapshot else 0
    events: QuerySet[SessionEvent] = session.events.filter(sequence__gt=after)
    replay = [
        ReplayedInput(
            sequence=event.sequence,
            tick=event.applied_tick,
            input=event.payload,
            events=event.applied_effects.get("events", []),
            story=msgspec.convert(story, StoryState) if (story := event.applied_effects.get("story")) else None,
            hooks=event.applied_effects.get("hooks", []),
        )
        for event in events
        if event.applied_tick is not None
    ]
    pending = [
        PendingInput(sequence=event.sequence, input=event.payload) for event in events if event.applied_tick is None
    ]
    return SessionOpen(
        session=str(session.pk),
        engine=session.engine,
        live=session.is_live,
        spec=published.engine_spec,
        story=published.stories[0] if published.stories else None,
        snapshot=Snapshot(
            tick=snapshot.tick,
            sequence=snapshot.sequence,
            engine_state=bytes(snapshot.engine_state),
            narrative=msgspec.convert(snapshot.narrative, NarrativeState),
        )
        if snapshot
        else None,
        replay=replay,
        pending=pending,
        target_tick=last_frame_seen(session=session),
        narrative=session_narrative(session=session),
    )


# The parts of a document character a worker plays it from (persona and the like; never secrets or notes).
CHARACTER_FIELDS_FOR_WORKERS = (
    *CHARACTER_FIELDS, "key", "greeting", "clues", "memory_scope", "reply_temperature", "reply_max_tokens",
)  # fmt: skip


def session_narrative(*, session: PlaySession) -> dict[str, Any]:
    """What the narrative engine needs of the session's world (read by inference.narrative.setting)."""
    published = published_world(session.version)
    world = published.world
    ids = dict(session.version.world.characters.values_list("name", "id"))
    return {
        "title": world.title,
        "description": world.description,
        "world_rules": world.world_rules,
        # Characters address the session's owner by name; a Live participant is named by each speech input.
        "player_name": str(session.owner),
        "content_rating": world.content_rating,
        "characters": [
            {
                name: character.as_published[name]
                for name in CHARACTER_FIELDS_FOR_WORKERS
                if name in character.as_published
            }
            | {"id": ids.get(character.name)}
            for character in published.characters
        ],
        "hooks": published.hooks,
        "safety": safety_terms(),
    }


def session_character(*, session: PlaySession, character_id: Any) -> Character | None:
    """One of the session's world's characters by id (a worker names characters by the ids it was sent)."""
    if not isinstance(character_id, int):
        return None
    return session.version.world.characters.filter(pk=character_id).first()


def session_speaker(*, session: PlaySession, speaker: Any) -> User | None:
    """Who spoke: the session's owner (`speaker` None), or the Live participant of that name."""
    if speaker is None:
        return session.owner
    return session.participants.filter(username=str(speaker)).first()


def character_recall(
    *, session: PlaySession, character_id: Any, speaker: Any, query: np.ndarray, recent: list[str]
) -> dict[str, Any]:
    """The memories and lore for a character's next reply: what it remembers of the speaker, by relevance to
    `query` (D,), and the lorebook entries that the `recent` lines activate."""
    character = session_character(session=session, character_id=character_id)
    player = session_speaker(session=session, speaker=speaker)
    recalled = {"turn": 0, "memories": [], "told": [], "lore": []}
    if character is None:
        return recalled
    if player is not None:
        memories = memories_recall(character=character, player=player, query=query)
        recalled |= {"turn": memories.turn, "memories": memories.memories, "told": memories.told}
    recalled["lore"] = lore_active(session=session, character_name=character.name, recent=recent)
    return recalled


def lore_active(*, session: PlaySession, character_name: str, recent: list[str]) -> list[str]:
    """The texts of the world's and the character's lorebook entries that the recent lines activate."""
    return lore_in_document(document=session.version.document, character_name=character_name, recent=recent)


def lore_in_document(*, document: dict[str, Any], character_name: str, recent: list[str]) -> list[str]:
    """The texts of a world document's lorebook entries (the world's and the character's) that `recent` activates."""
    published = PublishedWorld.of(document)
    keys = list(published.world.lorebooks)
    character = published.character_named(character_name)
    if character is not None and character.lorebook and character.lorebook not in keys:
        keys.append(character.lorebook)
    texts: list[str] = []
    for key in keys:
        if key in published.lorebooks:
            book = lorebook_from_document(dict(published.lorebooks[key]))
            texts += [entry.content for entry in active_entries(book, recent)]
    return texts


def version_playable(*, world: Any, user: User) -> Any:
    """The version a person plays: the newest approved one; a creator may also try their newest submission."""
    versions = world.versions.exclude(status="taken_down").order_by("-number")
    if user.is_authenticated and world.owner_id == user.pk:
        return versions.first()
    return versions.filter(status="approved").first()


def sessions_open_for(*, world: Any, user: User) -> QuerySet[PlaySession]:
    """The person's sessions of this world that can be resumed, newest first."""
    return (
        PlaySession.objects.filter(version__world=world, owner=user)
        .exclude(status=SessionStatus.ENDED)
        .order_by("-last_active_at")
    )


def live_text_refusal(*, session: PlaySession, payload: dict[str, Any]) -> str | None:
    """Why a participant's prompt or speech may not reach a Live world everyone watches, or None."""
    if not session.is_live or "text" not in payload:
        return None
    rating = published_world(session.version).world.content_rating
    if refused_terms(payload["text"], rating=rating, terms=term_filter_load()):
        return "the moderation filter held that back; it does not fit this world's rating"
    return None


def live_session_now(*, world: Any) -> PlaySession | None:
    """The shared session a Live world is running now, if any (what its gallery page shows and lets people watch)."""
    return (
        PlaySession.objects.filter(version__world=world, is_live=True, status=SessionStatus.RUNNING)
        .select_related("owner")
        .prefetch_related("participants")
        .order_by("created_at")
        .first()
    )


# Lines of the log a page shows when it opens: enough to pick the story and its conversations up where they stood,
# a conversation of twenty turns with its introduction included (the log scrolls).
LOG_LINES_SHOWN = 60


def story_so_far(*, session: PlaySession, viewer: User) -> list[str]:
    """The latest lines of the session's log as the page showed them, oldest first: what the narrator told
    (NarrationLine), the words said to characters and their replies. A reload or a second visit picks the story
    up where it stood (the worker keeps the story's place, not what the page showed)."""
    spoken = session.events.filter(kind="speech").select_related("player").order_by("-sequence")[: LOG_LINES_SHOWN // 2]
    told = session.narration.order_by("-pk")[:LOG_LINES_SHOWN]
    # (when, then which of a speech's two lines, text): a reply follows the words it answers.
    lines: list[tuple[Any, int, str]] = [(line.created_at, 0, line.text) for line in reversed(told)]
    for event in reversed(spoken):
        speaker = "You" if event.player_id == viewer.pk else (event.player.get_username() if event.player else "")
        lines.append((event.created_at, 0, f"{speaker}: {event.payload.get('text', '')}"))
        reply = event.applied_effects.get("reply")
        if reply:
            lines.append((event.created_at, 1, f"{event.payload.get('character', '')}: {reply}"))
    lines.sort(key=lambda line: line[:2])  # stable: lines told at the same moment keep their order
    return [text for _, _, text in lines[-LOG_LINES_SHOWN:]]
