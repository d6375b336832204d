"""The browser's end of a play session (`/ws/play/<session>/`); the protocol is play/PROTOCOL.md.

Frames are flow-controlled, so that the memory a browser can make the server hold stays bounded. A JPEG frame
stands alone: frames up to `FRAMES_IN_FLIGHT` ticks past the last acknowledged are in flight, and meanwhile only
the newest waits, so a slow browser gets the newest frame when it catches up. A video frame needs every frame
since the last key frame: a browser gets every one while its oldest unacknowledged frame is at most
`VIDEO_TICKS_IN_FLIGHT` ticks older; a browser further behind, or one that has just arrived, is sent no delta
frame until the next key frame, which it asks the worker for.

Inputs are rated as they arrive: `receive` takes a token and queues the input without awaiting anything,
and one task per connection logs the queued inputs in order. Channels hands a consumer its next message
only when the last handler returns, so a `receive` that awaited the database would read a flood at the
database's pace: every input would find a refilled bucket, and no flood would ever be refused, only logged
slowly. At most `INPUTS_WAITING` wait; more are refused like a flood.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, cast

from autobahn.exception import Disconnected
from django.conf import settings
from django.db import DatabaseError

from accounts.services import user_group
from common.concurrency import DatabaseCallConsumer, database_call
from play import metrics, protocol, services
from play.frames import frames_watch
from play.models import PlaySession, SessionStatus
from play.selectors import live_text_refusal, session_role

logger = logging.getLogger(__name__)

# JPEG frames are counted in ticks (frame numbers): a slow reader has at most this many queued on its way, and a
# page that acknowledges every `protocol.JPEG_ACK_TICKS` ticks always has one more frame coming to acknowledge.
FRAMES_IN_FLIGHT = 2 * protocol.JPEG_ACK_TICKS
# Frame numbers are ticks (20 a second): a browser half a second behind jumps to a key frame rather than watch
# ever later; a frame's bytes are bounded (daphne's 1 MiB message limit on the worker's socket), so ten are too.
VIDEO_TICKS_IN_FLIGHT = 10
# Inputs per second a browser may send, and the burst it may save up: key repeat and typing stay well under.
INPUT_RATE_PER_SECOND = 30
INPUT_BURST = 60
# Inputs accepted by the rate limit but not yet logged: a burst's worth (a page resends all it has unconfirmed
# after a reconnect), and no more however slow the database is.
INPUTS_WAITING = INPUT_BURST
# Accepted inputs timed until a frame applies them, per browser: a burst's worth and then some.
INPUTS_TIMED = 64


# Tasks that outlive the handler that started them (a park timer, a key frame asked for); the loop holds tasks
# weakly, and this keeps them alive.
BACKGROUND: set[asyncio.Task[None]] = set()


def in_background(work: Coroutine[Any, Any, None]) -> None:
    task = asyncio.create_task(work)
    BACKGROUND.add(task)
    task.add_done_callback(background_done)


def background_done(task: asyncio.Task[None]) -> None:
    BACKGROUND.discard(task)
    if not task.cancelled() and (error := task.exception()) is not None:
        logger.error("work a consumer left running failed", exc_info=error)


async def park_later(session_id: Any) -> None:
    """Give the session's worker slot back if nobody has come back after a while (see PLAY_PARK_AFTER_SECONDS).

    The park itself looks at when a browser last watched, so a timer from an earlier departure that fires after
    someone came back (and left again) parks nothing. If this process dies first, the sweep on each worker
    heartbeat (services.sessions_park_unwatched) parks the session instead.
    """
    await asyncio.sleep(settings.PLAY_PARK_AFTER_SECONDS)
    await database_call(services.session_park_if_unwatched)(session_id=session_id)


def session_for(session_id: str) -> PlaySession | None:
    return PlaySession.objects.select_related("version__world").filter(pk=session_id).first()


class InputBucket:
    """A token bucket: `INPUT_BURST` inputs at once, refilled at `INPUT_RATE_PER_SECOND`, read off `clock`."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.tokens, self.filled_at = float(INPUT_BURST), clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(INPUT_BURST, self.tokens + (now - self.filled_at) * INPUT_RATE_PER_SECOND)
        self.filled_at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class PlayConsumer(DatabaseCallConsumer):
    """One browser watching (and, as a player, steering) one session."""

    session: PlaySession

    async def connect(self) -> None:
        user = self.scope["user"]
        browser = protocol.browser_id(self.scope.get("query_string", b""))
        session = await database_call(session_for)(self.scope["url_route"]["kwargs"]["session_id"])
        role = None
        if session is not None and browser is not None:
            role = await database_call(session_role)(session=session, user=user)
        if session is None or browser is None or role is None:
            await self.close()  # before accept: the handshake ends with 403 and no frame is ever sent
            return
        self.session, self.role, self.browser = session, role, browser
        self.is_creator = self.session.version.world.owner_id == user.pk
        self.group = services.session_group(self.session.pk)
        self.sent_frame = self.acked_frame = 0
        self.waiting_frame: bytes | None = None
        # Video: the numbers of the frames sent and not yet acknowledged, oldest first; whether no delta may be
        # sent until a key frame (so at first: the stream is joined at a key frame), and whether one was asked for.
        self.video_in_flight: collections.deque[int] = collections.deque()
        self.awaiting_key_frame, self.key_frame_asked = True, False
        # For the operators' latency figures: when each logged input and words to a character were accepted.
        self.accepted_at: dict[int, float] = {}
        self.spoken_at: float | None = None
        self.frame_received_at: float | None = None
        self.inputs = InputBucket(time.monotonic)
        self.inputs_waiting: asyncio.Queue[protocol.BrowserInput] = asyncio.Queue(maxsize=INPUTS_WAITING)
        self.inputs_logger = asyncio.create_task(self.socket_closed_on_failure(self.inputs_log()))
        self.user_group = user_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.channel_layer.group_add(self.user_group, self.channel_name)
        # Frames that arrive before the welcome wait here: a socket not yet accepted cannot be sent anything. A video
        # stream missing the oldest of them waits for a key frame, as any browser that falls behind.
        self.frames_before_welcome: collections.deque[dict[str, Any]] | None = collections.deque(
            maxlen=VIDEO_TICKS_IN_FLIGHT
        )
        self.frames = await frames_watch(self.group, self)
        self.presence_keeper = asyncio.create_task(self.socket_closed_on_failure(self.presence_keep()))
        # Read again now that the groups are joined: a status the session took before this (dispatched while the
        # socket was opening) is in the welcome, and every later one reaches this socket as a message.
        await database_call(self.session.refresh_from_db)(fields=["status"])
        await self.accept()
        # The session's status field holds exactly the states the protocol names.
        status = cast(protocol.SessionStatus, self.session.status)
        welcome = protocol.Welcome(
            protocol=protocol.PROTOCOL_VERSION, session=str(self.session.pk), role=role, status=status
        )
        await self.send_message(welcome)
        early, self.frames_before_welcome = self.frames_before_welcome or (), None
        for event in early:
            await self.session_frame(event)
        await database_call(services.session_seen)(session_id=self.session.pk)
        if self.session.status != SessionStatus.ENDED:
            await database_call(services.session_resume)(session=self.session, viewer=self.channel_name)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "presence_keeper"):  # set last before accept: everything disconnect undoes exists
            self.inputs_logger.cancel()  # inputs still waiting were never accepted: the page sends them again
            await self.frames.leave(self)
            await self.channel_layer.group_discard(self.group, self.channel_name)
            await self.channel_layer.group_discard(self.user_group, self.channel_name)
            self.presence_keeper.cancel()
            await database_call(services.session_seen)(session_id=self.session.pk)  # the park time counts from now
            in_background(park_later(self.session.pk))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        try:
            message = protocol.parse(text_data, size)
        except protocol.PlayProtocolError as error:
            await self.send_message(protocol.Error(error=str(error)))
            return
        if isinstance(message, protocol.Ack):
            await self.frames_acknowledged(message.frame)
            return
        if self.role != "player":
            spectating = "spectators watch; only players send inputs"
            await self.send_message(protocol.Error(error=spectating, seq=message.seq))
            return
        if not self.inputs.take():
            metrics.INPUTS_REFUSED.inc()
            await self.send_message(protocol.Error(error="too many inputs; slow down", seq=message.seq))
            return
        try:
            self.inputs_waiting.put_nowait(message)
        except asyncio.QueueFull:
            waiting = "too many inputs waiting to be logged; slow down"
            await self.send_message(protocol.Error(error=waiting, seq=message.seq))

    async def socket_closed_on_failure(self, loop: Coroutine[Any, Any, None]) -> None:
        """Run one of the loops beside the consumer's own. A loop that fails closes the socket: the page
        reconnects and starts them all afresh, where a loop that had quietly ended would leave the browser
        waiting forever (for frames, say) on a socket that looks healthy."""
        try:
            await loop
        except Exception:
            logger.exception("a loop of a socket of session %s failed; the socket is closed", self.session)
            await self.close(code=protocol.CLOSE_INTERNAL_ERROR)

    async def presence_keep(self) -> None:
        """Say every few seconds that this browser still watches; a daphne that dies stops saying it."""
        while True:
            await asyncio.sleep(services.presence_refresh_seconds())
            try:
                await database_call(services.session_seen)(session_id=self.session.pk)
            except Exception:  # the cache down for a moment: say it again next time
                logger.exception("could not note that session %s is watched", self.session)

    async def inputs_log(self) -> None:
        """Log the inputs `receive` queued, one at a time and in the order they came."""
        while True:
            message = await self.inputs_waiting.get()
            try:
                await self.input_log(message)
            except Exception:  # one input's failure must not stop the inputs behind it
                logger.exception("could not log input %s of session %s", message.seq, self.session)
                failed = "this input could not be logged; it was not kept"
                await self.send_message(protocol.Error(error=failed, seq=message.seq))

    async def input_log(self, message: protocol.BrowserInput) -> None:
        payload = message.payload()
        try:
            # Only typed words can be refused; keys and choices skip the trip to the database thread.
            refusal = (
                await database_call(live_text_refusal)(session=self.session, payload=payload)
                if "text" in payload
                else None
            )
            if refusal is not None:
                await self.send_message(protocol.Error(error=refusal, seq=message.seq))
                return
            event, new = await database_call(services.session_input_append)(
                session=self.session,
                player=self.scope["user"],
                browser=self.browser,
                client_sequence=message.seq,
                payload=payload,
            )
        except DatabaseError:
            # Nothing was logged (the transaction rolled back): say so, and the page sends it again later.
            unavailable = "the database is unavailable; this input was not kept, try again shortly"
            await self.send_message(protocol.Error(error=unavailable, seq=message.seq))
            return
        except services.WorkerBusy as busy:
            await self.send_message(protocol.Error(error=str(busy), seq=message.seq))
            return
        if new:
            self.accepted(event.sequence, payload)
        await self.send_message(protocol.Accepted(seq=message.seq, sequence=event.sequence, duplicate=not new))

    def accepted(self, sequence: int, payload: dict[str, Any]) -> None:
        """Note when an input was accepted; the oldest notes go when too many wait (a frame applies inputs in
        order, so an old one's frame came long ago or never will)."""
        now = time.monotonic()
        self.accepted_at[sequence] = now
        while len(self.accepted_at) > INPUTS_TIMED:
            del self.accepted_at[next(iter(self.accepted_at))]
        if payload["type"] == "speech":
            self.spoken_at = now

    async def frame_arrived(self, event: dict[str, Any]) -> None:
        """A frame of the session, handed over by play.frames beside the consumer's own loop; the bookkeeping it
        shares with acknowledgements has no await between its reads and writes."""
        if self.frames_before_welcome is None:
            with contextlib.suppress(Disconnected):  # the socket is closing; its disconnect leaves the frames
                await self.session_frame(event)
            return
        self.frames_before_welcome.append(event)

    async def frames_unreadable(self) -> None:
        await self.close(code=protocol.CLOSE_INTERNAL_ERROR)

    async def session_frame(self, event: dict[str, Any]) -> None:
        """A new frame from the worker: send it, or keep it as the newest waiting if the browser lags."""
        if event["video"]:
            self.frame_timed(event["sequence"])
            await self.video_frame(event["number"], event["key"], event["data"])
            return
        if event["number"] <= self.sent_frame:
            return
        self.frame_timed(event["sequence"])
        data = event["data"]  # the browsers' frame, as play.worker_consumer relays it
        if self.sent_frame - self.acked_frame >= FRAMES_IN_FLIGHT:
            if self.waiting_frame is not None:
                metrics.FRAMES_DROPPED.inc()
            self.waiting_frame = data
            return
        await self.send_frame(event["number"], data)

    async def video_frame(self, number: int, key: bool, data: bytes) -> None:
        """Send a video frame, unless the browser lags or awaits a key frame: a delta frame after one it was
        not sent would garble its picture until the next key frame."""
        # A number this browser was sent already: a stream restarted behind it (a daphne died before noting the
        # newest number), whose next deltas build on this frame, which the browser will not get.
        restarted = number <= self.sent_frame
        behind = bool(self.video_in_flight) and number - self.video_in_flight[0] > VIDEO_TICKS_IN_FLIGHT
        if restarted or behind or (self.awaiting_key_frame and not key):
            metrics.FRAMES_DROPPED.inc()
            self.awaiting_key_frame = True
            # Asked once until a key frame is sent: a browser that stays behind (or never acknowledges) waits for
            # the periodic one, rather than making the stream of every viewer key frames only.
            if not self.key_frame_asked:
                self.key_frame_asked = True
                # Not awaited: the other browsers of the session wait for their frames until this returns.
                in_background(database_call(services.session_key_frame_ask)(session_id=self.session.pk))
            return
        self.awaiting_key_frame = self.key_frame_asked = False
        self.video_in_flight.append(number)
        await self.send_frame(number, data)

    def frame_timed(self, applied: int) -> None:
        """The interval since the last frame, and how long each input this frame applies waited for it."""
        now = time.monotonic()
        if self.frame_received_at is not None:
            metrics.FRAME_INTERVAL.observe(now - self.frame_received_at)
        self.frame_received_at = now
        for sequence in [sequence for sequence in self.accepted_at if sequence <= applied]:
            metrics.INPUT_TO_FRAME.observe(now - self.accepted_at.pop(sequence))

    async def frames_acknowledged(self, frame: int) -> None:
        self.acked_frame = max(self.acked_frame, min(frame, self.sent_frame))
        while self.video_in_flight and self.video_in_flight[0] <= self.acked_frame:
            self.video_in_flight.popleft()
        if self.waiting_frame is not None and self.sent_frame - self.acked_frame < FRAMES_IN_FLIGHT:
            data, self.waiting_frame = self.waiting_frame, None
            number = protocol.BROWSER_FRAME_HEADER.unpack_from(data)[0]
            await self.send_frame(number, data)

    async def send_frame(self, number: int, data: bytes) -> None:
        self.sent_frame = number
        await self.send(bytes_data=data)

    async def session_message(self, event: dict[str, Any]) -> None:
        """Narration, choices, status (play.services.send_to_browsers, or a worker's, translated by
        play.protocol.from_worker): checked against the protocol once more, as the browser will read it."""
        message = event["message"]
        if message.get("type") == "character_line" and message.get("text") and self.spoken_at is not None:
            metrics.REPLY_LATENCY.observe(time.monotonic() - self.spoken_at)
            self.spoken_at = None
        await self.relay(message)

    async def session_creator_message(self, event: dict[str, Any]) -> None:
        """What only the world's creator sees (the prompt a reply was written from, for their debug panel)."""
        if self.is_creator:
            await self.relay(event["message"])

    async def relay(self, data: dict[str, Any]) -> None:
        try:
            message = protocol.browser_message(data)
        except protocol.PlayProtocolError:
            logger.exception("dropped a message for the browsers of session %s", self.session)
            return
        await self.send_message(message)

    async def user_sockets_close(self, event: dict[str, Any]) -> None:
        """The player signed out, changed their password or was suspended (accounts.services.user_sockets_close)."""
        await self.send_message(protocol.Error(error=event["reason"]))
        await self.close(code=protocol.CLOSE_SIGNED_OUT)

    async def send_message(self, message: protocol.ForBrowser) -> None:
        await self.send(text_data=message.encode())
