"""Writes about play sessions: starting and queueing, dispatch to workers, the input log, snapshots, failover.

Messages to workers and browsers leave through the channel layer only after the transaction that decided
them commits (`transaction.on_commit`), so no worker is told of a session the database does not have.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
import uuid
from datetime import timedelta
from typing import Any

import msgspec
import numpy as np
from asgiref.sync import async_to_sync
from channels.exceptions import ChannelFull
from channels.layers import get_channel_layer
from django.conf import settings
from django.core import signing
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.db.models import Field
from django.utils import timezone

from accounts.models import User
from gallery.services import world_play_record
from inference import protocol as worker_protocol
from inference.controls import PROPOSAL_INPUT_TYPES
from inference.protocol import SessionClose, SessionInput, SessionKeyFrame, SessionOpen, SessionRefresh
from memories.services import exchange_record
from play import protocol
from play.models import NarrationLine, PlaySession, SessionEvent, SessionSnapshot, SessionStatus
from play.selectors import (
    LOG_LINES_SHOWN,
    SNAPSHOTS_NEWEST_FIRST,
    last_frame_seen,
    queue_estimated_wait_seconds,
    queue_place,
    session_character,
    session_open_message,
    session_speaker,
    worker_least_loaded,
)
from workers.models import WorkerNode
from worlds.models import WorldVersion
from worlds.published import published_world
from worlds.services import hook_outcome_record

logger = logging.getLogger(__name__)

SNAPSHOTS_KEPT = 3  # the newest is what a failover needs; two more in case the newest was cut short
NO_WORKER_AVAILABLE = "no worker is available; you keep your place"


# The channel layer frames travel on (pub/sub on Redis, see settings); everything else takes the default one.
FRAMES_LAYER = "frames"


def session_group(session_id: Any) -> str:
    """The channel-layer group of a session's browsers (on both layers)."""
    return f"play.{session_id}"


ToWorker = SessionOpen | SessionInput | SessionClose | SessionRefresh | SessionKeyFrame


VIEWER_SALT = "play.viewer"


def viewer_address(session_id: Any, channel_name: str) -> str:
    """A browser's address for a worker to hand back: signed, and bound to the session, so that a worker can
    answer one browser of a session it hosts and reach no other channel."""
    return signing.dumps([str(session_id), channel_name], salt=VIEWER_SALT, compress=True)


def viewer_channel(address: str, *, session_id: Any) -> str:
    """The channel of the browser a worker's answer is for, or ValueError if the address is not one this
    platform signed for that session."""
    try:
        session, channel_name = signing.loads(address, salt=VIEWER_SALT)
    except (signing.BadSignature, ValueError, TypeError):
        raise ValueError("the viewer's address is not one the platform gave") from None
    if session != str(session_id):
        raise ValueError("the viewer's address is for another session")
    return str(channel_name)


def send_to_worker(channel_name: str, message: ToWorker, *, required: bool = True) -> None:
    """Send after commit. A worker whose channel is full raises ChannelFull, unless the message is not
    `required` (a reopen the session can do without while it keeps running): that one is logged and dropped.

    The channel layer carries the message encoded once, with what the worker's endpoint needs to know of it
    (which session it gives or takes away) beside it."""
    forward = worker_forward_event(message)

    def send() -> None:
        try:
            async_to_sync(get_channel_layer().send)(channel_name, forward)
        except ChannelFull:
            if required:
                raise
            logger.warning("worker channel %s is full; dropped %s", channel_name, forward["kind"])

    transaction.on_commit(send)


def worker_forward_event(message: ToWorker) -> dict[str, Any]:
    """The channel-layer event that carries a message to a worker's endpoint (WorkerConsumer.worker_forward)."""
    return {
        "type": "worker.forward",
        "kind": worker_protocol.type_of(message),
        "session": message.session,
        "text": worker_protocol.encode(message),
    }


def send_to_browsers(session_id: Any, message: protocol.ForBrowser) -> None:
    carried = message.as_builtins()
    transaction.on_commit(
        lambda: async_to_sync(get_channel_layer().group_send)(
            session_group(session_id), {"type": "session.message", "message": carried}
        )
    )


@transaction.atomic
def session_start(*, version: WorldVersion, owner: User) -> PlaySession:
    """A new session of a published version for `owner`, dispatched at once or queued."""
    world = published_world(version).world
    session = PlaySession.objects.create(
        version=version,
        owner=owner,
        engine=world.engine,
        is_live=world.category == "live",
        queued_at=timezone.now(),
    )
    world_play_record(player=owner, world=version.world)
    session_dispatch(session=session)
    return session


@transaction.atomic
def live_session_join(*, version: WorldVersion, user: User) -> PlaySession:
    """The one running session of a Live world (started if there is none), with `user` as a participant."""
    session = (
        PlaySession.objects.select_for_update()
        .filter(version__world=version.world, is_live=True)
        .exclude(status=SessionStatus.ENDED)
        .order_by("created_at")
        .first()
    )
    if session is None:
        session = session_start(version=version, owner=user)
    elif session.owner_id != user.pk:
        session.participants.add(user)
        world_play_record(player=user, world=version.world)
    return session


@transaction.atomic
def session_dispatch(*, session: PlaySession) -> WorkerNode | None:
    """Give a queued session to the least-loaded worker that runs its engine; leave it queued if none can."""
    # One dispatcher at a time: two sessions must not both take a worker's last slot.
    list(WorkerNode.objects.select_for_update().order_by("id").values_list("id", flat=True))
    session = PlaySession.objects.select_for_update().get(pk=session.pk)
    if session.status != SessionStatus.QUEUED:
        return session.worker
    worker = worker_least_loaded(engine=session.engine)
    if worker is None:
        place = queue_place(session=session)
        wait = queue_estimated_wait_seconds(place=place, engine=session.engine)
        send_to_browsers(
            session.pk,
            protocol.Status(
                state="queued",
                queue_place=place,
                estimated_wait_s=wait,
                reason=NO_WORKER_AVAILABLE if wait is None else None,
            ),
        )
        return None
    session.status, session.worker = SessionStatus.RUNNING, worker
    session.save(update_fields=["status", "worker"])
    send_to_worker(worker.channel_name, session_open_message(session=session))
    send_to_browsers(session.pk, protocol.Status(state="running", worker=worker.name))
    return worker


def sessions_dispatch_queued() -> int:
    """Dispatch waiting sessions, first come first served, while workers have room; how many were placed.

    Called when a worker says hello. A worker's new connection hosts nothing (a worker drops its sessions with
    its connection), yet after daphne or the channel layer restarted no disconnect may have been handled for
    the old one, or the open sent to it was lost: the sessions the database still gives to a worker that
    connected just now are opened on it again (a worker that does host one answers as to a refresh).
    """
    recently = timezone.now() - timedelta(seconds=settings.WORKER_STALE_AFTER_SECONDS)
    for session in PlaySession.objects.filter(
        status=SessionStatus.RUNNING, worker__connected_at__gte=recently, worker__disconnected_at__isnull=True
    ).select_related("worker"):
        session_reopen(session=session)
    placed = 0
    for session in PlaySession.objects.filter(status=SessionStatus.QUEUED).order_by("queued_at"):
        if session_dispatch(session=session) is None:
            break
        placed += 1
    for session in PlaySession.objects.filter(status=SessionStatus.QUEUED).order_by("queued_at"):
        session_dispatch(session=session)  # tells each one still waiting its new place
    return placed


class WorkerBusy(Exception):
    """The session's worker has more inputs waiting than its channel holds; the input was not kept."""


def session_input_append(
    *, session: PlaySession, player: User, browser: str, client_sequence: int, payload: dict[str, Any]
) -> tuple[SessionEvent, bool]:
    """Log an input (once, however often the browser resends it) and forward it to the session's worker.

    Returns the logged event and whether it is new. Raises WorkerBusy, with nothing kept, when the worker's
    channel is full: the browser is told and sends the input again later.
    """
    # A resent input is found by the unique (session, player, browser, client_sequence) constraint failing, not
    # by a lookup first, which would cost every input a query for the rare resend. `client_sequence`
    # counts per page (`browser`), so a player's second tab is not taken for a resend of the first's inputs.
    if session.is_live and session.owner_id != player.pk:
        # The owner's keys steer the camera everyone watches; every other participant walks an avatar.
        payload = {**payload, "participant": player.get_username()}
    try:
        event = event_log_and_forward(
            session_id=session.pk, payload=payload, player=player, browser=browser, client_sequence=client_sequence
        )
    except IntegrityError:
        logged = SessionEvent.objects.get(
            session=session, player=player, browser=browser, client_sequence=client_sequence
        )
        return logged, False
    if payload["type"] == "speech":
        # The player's other tabs, and everyone in a Live world, see what was said before the reply to it.
        said = protocol.Said(
            browser=browser, speaker=player.get_username(), character=payload["character"], text=payload["text"]
        )
        send_to_browsers(session.pk, said)
    return event, True


def event_log_and_forward(
    *,
    session_id: Any,
    payload: dict[str, Any],
    player: User | None = None,
    browser: str = "",
    client_sequence: int | None = None,
) -> SessionEvent:
    """Log an input (see event_log) and send it to the session's worker once it is committed. Raises WorkerBusy,
    with the input withdrawn, when the worker's channel is full."""
    event, worker_channel = event_log(
        session_id=session_id, payload=payload, player=player, browser=browser, client_sequence=client_sequence
    )
    if worker_channel is not None:
        try:
            send_to_worker(worker_channel, input_forward_message(event))
        except ChannelFull:
            # The log, which a failover replays, holds only what the worker was given.
            SessionEvent.objects.filter(pk=event.pk).delete()
            busy = "the world's worker is too busy to take this input; it was not kept, try again shortly"
            raise WorkerBusy(busy) from None
    return event


def event_log(
    *,
    session_id: Any,
    payload: dict[str, Any],
    player: User | None = None,
    browser: str = "",
    client_sequence: int | None = None,
) -> tuple[SessionEvent, str | None]:
    """Number an input in the session's sequence and log it; returns it with the channel of the worker that
    runs the session (None while none does). Raises IntegrityError, with nothing logged and no number taken,
    for an input this browser sent already.

    The UPDATE that takes the number holds the session's row until the log is written, so concurrent inputs
    (Live worlds, worker proposals) take distinct numbers in the order they are logged. Every input of every
    player pays for this: on PostgreSQL it is one statement, which commits alone outside a transaction."""
    event = SessionEvent(
        session_id=session_id,
        player=player,
        browser=browser,
        client_sequence=client_sequence,
        kind=payload["type"],
        payload=payload,
        created_at=timezone.now(),
    )
    if connection.vendor == "postgresql":
        # In a caller's transaction, a savepoint keeps a refused resend from aborting it.
        with transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext():
            status, worker_channel = event_numbered_and_inserted(event)
    else:
        with transaction.atomic():
            status, worker_channel = event_numbered(event)
            event.save(force_insert=True)
    return event, worker_channel if status == SessionStatus.RUNNING and worker_channel else None


def number_taking_update(returning: str) -> str:
    """The UPDATE that takes a session's next input number (parameters: `number_taking_parameters`), returning
    `returning`: PostgreSQL and SQLite both speak UPDATE … RETURNING."""
    sessions = connection.ops.quote_name(PlaySession._meta.db_table)
    # Only the quoted table name is formatted in; every value is a parameter.
    return (
        f"UPDATE {sessions} SET last_sequence = last_sequence + 1, last_active_at = %s "  # noqa: S608
        f"WHERE id = %s RETURNING {returning}"
    )


def number_taking_parameters(event: SessionEvent) -> list[Any]:
    return [
        connection.ops.adapt_datetimefield_value(event.created_at),
        PlaySession._meta.pk.get_db_prep_value(event.session_id, connection),
    ]


@functools.cache
def input_logging_statement() -> tuple[str, tuple[Field[Any, Any], ...]]:
    """PostgreSQL's one statement that numbers an input and inserts it, and the event's fields it writes in
    order; built once, as every input runs it."""
    events = connection.ops.quote_name(SessionEvent._meta.db_table)
    workers = connection.ops.quote_name(WorkerNode._meta.db_table)
    numbered_by_session = {"session_id", "sequence"}
    written = tuple(
        field
        for field in SessionEvent._meta.concrete_fields
        if not field.primary_key and field.attname not in numbered_by_session
    )
    columns = ", ".join(connection.ops.quote_name(field.column or field.attname) for field in written)
    placeholders = ", ".join(["%s"] * len(written))
    # Only quoted table and column names are formatted in; every value is a parameter.
    statement = (
        f"WITH numbered AS ({number_taking_update('id, last_sequence, status, worker_id')}), "  # noqa: S608
        f"logged AS (INSERT INTO {events} (session_id, sequence, {columns}) "
        f"SELECT id, last_sequence, {placeholders} FROM numbered RETURNING id, sequence) "
        f"SELECT logged.id, logged.sequence, numbered.status, {workers}.channel_name "
        f"FROM logged CROSS JOIN numbered LEFT JOIN {workers} ON {workers}.id = numbered.worker_id"
    )
    return statement, written


def event_numbered_and_inserted(event: SessionEvent) -> tuple[str, str | None]:
    """Number `event` in its session and insert it, in one PostgreSQL statement (an UPDATE … RETURNING feeding
    an INSERT); the session's status and its worker's channel. Sets the event's number and id."""
    statement, written = input_logging_statement()
    parameters = [
        *number_taking_parameters(event),
        *(field.get_db_prep_save(getattr(event, field.attname), connection) for field in written),
    ]
    with connection.cursor() as cursor:
        cursor.execute(statement, parameters)
        row = cursor.fetchone()
    if row is None:
        raise PlaySession.DoesNotExist(f"no play session {event.session_id}")
    event.pk, event.sequence = row[0], row[1]
    event._state.adding, event._state.db = False, connection.alias
    return row[2], row[3] or None


def event_numbered(event: SessionEvent) -> tuple[str, str | None]:
    """Take `event`'s number in its session (the event is inserted after it, in the same transaction); the
    session's status and its worker's channel (None without a worker)."""
    workers = connection.ops.quote_name(WorkerNode._meta.db_table)
    returning = f"last_sequence, status, (SELECT channel_name FROM {workers} WHERE {workers}.id = worker_id)"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(number_taking_update(returning), number_taking_parameters(event))
        row = cursor.fetchone()
    if row is None:
        raise PlaySession.DoesNotExist(f"no play session {event.session_id}")
    event.sequence = row[0]
    return row[1], row[2] or None


def input_forward_message(event: SessionEvent) -> SessionInput:
    """A logged input as its worker receives it (inference/protocol.py)."""
    return SessionInput(session=str(event.session_id), sequence=event.sequence, input=event.payload)


@transaction.atomic
def session_proposal_append(*, session_id: str, payload: dict[str, Any]) -> tuple[SessionEvent, bool]:
    """Log what a worker's narrative work decided (a beat's choices, a hook's branch, the choice a player's own
    words meant) as the session's next input, so that it is applied at a known tick and replayed, never
    decided twice; count hook outcomes. Returns the event and whether the session still runs on a worker: the
    caller then hands it back to the worker that proposed it."""
    if payload.get("type") not in PROPOSAL_INPUT_TYPES:
        raise ValueError(f"a worker may propose only {', '.join(PROPOSAL_INPUT_TYPES)} inputs")
    event, worker_channel = event_log(session_id=session_id, payload=payload)
    if payload["type"] == "hook_outcome":
        world_id = PlaySession.objects.filter(pk=session_id).values_list("version__world_id", flat=True).get()
        hook_outcome_record(world_id=world_id, hook_name=str(payload.get("hook")), branch_name=payload.get("branch"))
    return event, worker_channel is not None


@transaction.atomic
def session_exchange_record(
    *,
    session_id: uuid.UUID,
    sequence: int,
    character_id: int | None,
    speaker: str | None,
    said: str,
    reply: str,
    memories: list[tuple[str, float, np.ndarray]],
) -> None:
    """A character answered: keep the reply with the player's words in the log, and what the player told it."""
    event = SessionEvent.objects.select_for_update().filter(session_id=session_id, sequence=sequence).first()
    if event is not None:
        event.applied_effects = {**event.applied_effects, "reply": reply}
        event.save(update_fields=["applied_effects"])
    session = PlaySession.objects.get(pk=session_id)
    character = session_character(session=session, character_id=character_id)
    player = session_speaker(session=session, speaker=speaker)
    if character is not None and player is not None:
        exchange_record(character=character, player=player, memories=memories)


def applied_effects(applied: worker_protocol.SessionApplied) -> tuple[uuid.UUID, int, int, dict[str, Any]]:
    """(session, sequence, tick, effects) of an applied input, the effects as the log keeps them."""
    effects: dict[str, Any] = {"events": applied.events}
    if applied.story is not None:
        effects["story"] = msgspec.to_builtins(applied.story)
    if applied.hooks:
        effects["hooks"] = applied.hooks
    return uuid.UUID(applied.session), applied.sequence, applied.tick, effects


@transaction.atomic
def session_inputs_applied(*, applied: list[tuple[uuid.UUID, int, int, dict[str, Any]]]) -> None:
    """Record the tick each input was applied at and what it became (a worker's report of one tick, all its
    sessions); replay after a failover relies on it.

    One UPDATE joined to the reported rows, written as SQL: the daphne process a worker is connected to runs this
    twenty times a second for that worker, and the ORM's UPDATE with a CASE per input spent most of its time
    building the query, not running it. `UPDATE … FROM` is PostgreSQL's and SQLite's (3.33 and later) alike."""
    reported = {(session_id, sequence): (tick, effects) for session_id, sequence, tick, effects in applied}
    if not reported:
        return
    session_field = SessionEvent._meta.get_field("session")
    effects_field = SessionEvent._meta.get_field("applied_effects")
    table = connection.ops.quote_name(SessionEvent._meta.db_table)
    rows = "SELECT %s AS session_id, %s AS sequence, %s AS tick, %s AS effects" + (
        " UNION ALL SELECT %s, %s, %s, %s" * (len(reported) - 1)
    )
    values = [
        value
        for (session_id, sequence), (tick, effects) in reported.items()
        for value in (
            session_field.get_db_prep_value(session_id, connection),
            sequence,
            tick,
            effects_field.get_db_prep_value(effects, connection),
        )
    ]
    # Only the quoted table name and placeholders are formatted in; every value is a parameter.
    statement = (
        f"UPDATE {table} SET applied_tick = reported.tick, applied_effects = reported.effects "  # noqa: S608
        f"FROM ({rows}) AS reported "
        f"WHERE {table}.session_id = reported.session_id AND {table}.sequence = reported.sequence"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, values)


@transaction.atomic
def session_snapshot_store(
    *, session_id: uuid.UUID, tick: int, sequence: int, engine_state: bytes, narrative: Any
) -> None:
    SessionSnapshot.objects.create(
        session_id=session_id, tick=tick, sequence=sequence, engine_state=engine_state, narrative=narrative
    )
    PlaySession.objects.filter(pk=session_id, last_frame__lt=tick).update(last_frame=tick)
    stale = SessionSnapshot.objects.filter(session_id=session_id).order_by(*SNAPSHOTS_NEWEST_FIRST)[SNAPSHOTS_KEPT:]
    SessionSnapshot.objects.filter(pk__in=list(stale.values_list("pk", flat=True))).delete()


@transaction.atomic
def session_narration_record(*, session_id: uuid.UUID, text: str) -> None:
    """Keep a line the narrator told the session's browsers, and no more of them than a reloaded page shows."""
    NarrationLine.objects.create(session_id=session_id, text=text)
    stale = NarrationLine.objects.filter(session_id=session_id).order_by("-pk")[LOG_LINES_SHOWN:]
    NarrationLine.objects.filter(pk__in=list(stale.values_list("pk", flat=True))).delete()


@transaction.atomic
def worker_sessions_reassign(*, worker: WorkerNode) -> list[PlaySession]:
    """After a worker is gone: queue its sessions again and dispatch them to others from their snapshots."""
    sessions = list(PlaySession.objects.select_for_update().filter(worker=worker, status=SessionStatus.RUNNING))
    for session in sessions:
        session.status, session.worker = SessionStatus.QUEUED, None
        session.last_frame = last_frame_seen(session=session)
        session.save(update_fields=["status", "worker", "last_frame"])
        send_to_browsers(session.pk, protocol.Status(state="reconnecting"))
    for session in sorted(sessions, key=lambda session: session.queued_at or session.created_at):
        session_dispatch(session=session)
    return sessions


def presence_key(session_id: Any) -> str:
    return f"play:seen:{session_id}"


def presence_refresh_seconds() -> float:
    """How often a connected browser says it still watches: several times within the park time."""
    return min(settings.PLAY_PARK_AFTER_SECONDS / 4, 5.0)


def session_seen(*, session_id: Any) -> None:
    """A browser watches the session, or has just left it: note the time in the cache all daphnes share.

    Presence is a time, not a count of browsers: a count raised on arrival and lowered on departure stays up
    when a daphne dies with its viewers, and sessions nobody watches would then hold worker slots for good.
    A time stops being renewed whatever ends the watching, so `session_unwatched_seconds` grows on its own.
    """
    cache.set(presence_key(session_id), time.time(), timeout=settings.PLAY_PARK_AFTER_SECONDS * 10)


def session_unwatched_seconds(*, session_id: Any) -> float:
    """How long since a browser last said it watches. With no time noted (the cache was flushed, or no one has
    come yet) the clock starts now: a session is never parked on a missing time alone."""
    now = time.time()
    key = presence_key(session_id)
    cache.add(key, now, timeout=settings.PLAY_PARK_AFTER_SECONDS * 10)
    return now - cache.get(key, now)


@transaction.atomic
def session_resume(*, session: PlaySession, viewer: str | None = None) -> None:
    """A browser arrived (on the channel `viewer`): a parked session queues again and is dispatched from its
    snapshot and log; a running one is reopened on its worker (see session_reopen), which answers that browser
    alone: a crowd joining one by one must not have every browser sent the story again at each arrival."""
    PlaySession.objects.filter(pk=session.pk, status=SessionStatus.PARKED).update(
        status=SessionStatus.QUEUED, queued_at=timezone.now()
    )
    session.refresh_from_db()
    if session.status == SessionStatus.QUEUED:
        session_dispatch(session=session)
    elif session.status == SessionStatus.RUNNING and session.worker is not None:
        session_reopen(session=session, viewer=viewer)


def session_reopen(*, session: PlaySession, viewer: str | None = None) -> None:
    """Send a running session's open to its worker again: a worker hosting it resends where its story stands
    and applies logged inputs it never received; one that lost it (a restart of daphne or of the channel
    layer dropped its connection without a disconnect, or the first open) reopens it from snapshot and log."""
    assert session.worker is not None
    message = session_open_message(session=session)
    if viewer is not None:
        message = msgspec.structs.replace(message, viewer=viewer_address(session.pk, viewer))
    send_to_worker(session.worker.channel_name, message, required=False)


def session_key_frame_ask(*, session_id: Any) -> None:
    """A browser arrived at a video session or fell behind: ask its worker for a key frame to start it from.
    Not required: a full worker channel drops it, and the periodic key frame starts the browser instead."""
    worker = PlaySession.objects.filter(pk=session_id, status=SessionStatus.RUNNING).values_list(
        "worker__channel_name", flat=True
    )
    channel_name = worker.first()
    if channel_name:
        send_to_worker(channel_name, SessionKeyFrame(session=str(session_id)), required=False)


def session_inputs_resend(*, session_id: Any) -> None:
    """The worker missed a forwarded input (it came to an input after a gap): reopen the session there, so that
    it applies the logged inputs it never received."""
    session = PlaySession.objects.select_related("version", "worker").filter(pk=session_id).first()
    if session is not None and session.status == SessionStatus.RUNNING and session.worker is not None:
        session_reopen(session=session)


@transaction.atomic
def session_park_if_unwatched(*, session_id: Any) -> bool:
    """Free the worker slot of a session no browser has watched for PLAY_PARK_AFTER_SECONDS; its snapshot and
    log keep everything."""
    if session_unwatched_seconds(session_id=session_id) < settings.PLAY_PARK_AFTER_SECONDS:
        return False
    session = PlaySession.objects.select_for_update().filter(pk=session_id).first()
    if session is None or session.status not in (SessionStatus.RUNNING, SessionStatus.QUEUED):
        return False
    worker = session.worker
    session.last_frame = last_frame_seen(session=session)
    session.status, session.worker = SessionStatus.PARKED, None
    session.save(update_fields=["status", "worker", "last_frame"])
    if worker is not None:
        send_to_worker(worker.channel_name, SessionClose(session=str(session.pk)))
        transaction.on_commit(sessions_dispatch_queued)
    return True


def sessions_park_unwatched(*, worker: WorkerNode) -> int:
    """Park the worker's sessions nobody has watched for the park time; how many. Run on each of its heartbeats,
    so that a session whose viewers vanished with their daphne (no disconnect ran) still gives its slot back."""
    running = PlaySession.objects.filter(worker=worker, status=SessionStatus.RUNNING).values_list("pk", flat=True)
    return sum(session_park_if_unwatched(session_id=session_id) for session_id in list(running))


@transaction.atomic
def session_end(*, session: PlaySession, reason: str) -> None:
    worker = session.worker
    PlaySession.objects.filter(pk=session.pk).update(status=SessionStatus.ENDED, worker=None, ended_reason=reason)
    if worker is not None:
        send_to_worker(worker.channel_name, SessionClose(session=str(session.pk)))
    send_to_browsers(session.pk, protocol.Status(state="ended", reason=reason))
    transaction.on_commit(sessions_dispatch_queued)


def sessions_end_for_world(world_id: int, reason: str) -> int:
    """End every open session of a world (a takedown); how many were ended."""
    sessions = PlaySession.objects.filter(version__world_id=world_id).exclude(status=SessionStatus.ENDED)
    ended = 0
    for session in sessions:
        session_end(session=session, reason=reason)
        ended += 1
    return ended
