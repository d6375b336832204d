"""A session's frames, read once per daphne process and handed to each of its browsers that the process serves.

A worker's frame reaches every daphne process once (a group send on `services.FRAMES_LAYER`). Were each
browser's consumer to read it from a channel of its own, a Live world of forty players on one process would
decode the same frame forty times and wake forty tasks for it, and that was the larger part of what daphne
spent on a frame besides sending it. Here one reader per session and event loop receives it and calls each
browser's consumer in turn; the consumer's own handling (flow control, timing) is unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from typing import Any, Protocol

from channels.layers import get_channel_layer

from play import services

logger = logging.getLogger(__name__)


class FrameViewer(Protocol):
    """What a session's frames are handed to: a browser's consumer."""

    async def frame_arrived(self, event: dict[str, Any]) -> None: ...

    async def frames_unreadable(self) -> None: ...


class SessionFrames:
    """One session's frames on this event loop: one channel in the session's group, read by one task."""

    def __init__(self, group: str, registry: dict[str, SessionFrames]) -> None:
        self.group = group
        self.registry = registry  # where browsers arriving on this loop find it, until nobody watches
        self.viewers: dict[FrameViewer, None] = {}  # in the order they joined
        self.layer = get_channel_layer(services.FRAMES_LAYER)
        self.channel: str | None = None
        self.reader: asyncio.Task[None] | None = None
        # Joins and leaves of one session wait on each other: the channel is joined to the group once, and left
        # only when no browser on this loop watches the session any more.
        self.changing = asyncio.Lock()

    async def join(self, viewer: FrameViewer) -> None:
        async with self.changing:
            if self.channel is None:
                self.channel = await self.layer.new_channel()
                await self.layer.group_add(self.group, self.channel)
                self.reader = asyncio.create_task(self.read(self.channel))
            self.viewers[viewer] = None

    async def leave(self, viewer: FrameViewer) -> None:
        """Stop handing frames to `viewer`; the last to leave leaves the group.

        A browser that joined while the last one was leaving waited for the lock and joins afresh (a channel of
        its own, in the group again); it leaves through this same object, whether or not the registry still
        names it."""
        async with self.changing:
            self.viewers.pop(viewer, None)
            if self.viewers:
                return
            if self.registry.get(self.group) is self:
                del self.registry[self.group]
            if self.channel is not None:
                channel, self.channel = self.channel, None
                if self.reader is not None:
                    self.reader.cancel()
                    self.reader = None
                await self.layer.group_discard(self.group, channel)

    async def read(self, channel: str) -> None:
        try:
            while True:
                event = await self.layer.receive(channel)
                for viewer in list(self.viewers):
                    try:
                        await viewer.frame_arrived(event)
                    except Exception:
                        # One browser's failure is its own: it is closed (its page reconnects), the others go on.
                        logger.exception("a frame of %s could not be handed to a browser; it is closed", self.group)
                        self.viewers.pop(viewer, None)
                        await self.closed(viewer)
        except Exception:
            # The frames can no longer be read (the pub/sub connection is gone, say): every browser is closed, and
            # the pages' reconnections join the group afresh.
            logger.exception("the frames of %s can no longer be read; its browsers are closed", self.group)
            viewers, self.viewers = list(self.viewers), {}
            self.channel = self.reader = None
            with contextlib.suppress(Exception):
                await self.layer.group_discard(self.group, channel)
            for viewer in viewers:
                await self.closed(viewer)

    async def closed(self, viewer: FrameViewer) -> None:
        try:
            await viewer.frames_unreadable()
        except Exception:  # its socket may be closing already; the others' frames go on
            logger.exception("a browser of %s that could not be handed frames could not be closed", self.group)


# Per event loop: a channel layer's connections belong to the loop that opened them.
SESSIONS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, SessionFrames]] = weakref.WeakKeyDictionary()


async def frames_watch(group: str, viewer: FrameViewer) -> SessionFrames:
    """Hand `viewer` every frame sent to the session's `group` from now on, until it leaves what this returns."""
    registry = SESSIONS.setdefault(asyncio.get_running_loop(), {})
    frames = registry.get(group)
    if frames is None:
        frames = registry[group] = SessionFrames(group, registry)
    await frames.join(viewer)
    return frames
