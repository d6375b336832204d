"""An H.264 stream played in a real browser (Debian's Chromium, WebCodecs) from real worker processes through a
real daphne: pictures decode, a second viewer starts within a key-frame interval, and a failover restarts the
stream at a key frame while the picture goes on."""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page

from inference import protocol as worker_protocol
from inference.video.encoder import CONFIG as VIDEO
from play.models import PlaySession
from play.protocol import BROWSER_FRAME_HEADER
from play.tests.factories import PlaySessionFactory
from tests.fixtures import LivePlatform, start_platform, wait_until
from tests.test_browser_play import page_signed_in
from tests.test_play_full_stack import worker_process

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# The picture's brightness spread, sampled in the page: a blank or single-colour canvas has none.
PICTURE_SPREAD = """canvas => {
  const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let low = 255, high = 0;
  for (let index = 0; index < pixels.length; index += 4 * 97) {
    const level = (pixels[index] + pixels[index + 1] + pixels[index + 2]) / 3;
    low = Math.min(low, level); high = Math.max(high, level);
  }
  return high - low;
}"""


class FramesSeen:
    """Every binary frame a page received, as (arrival time, frame number, codec, key frame), in order."""

    def __init__(self, page: Page) -> None:
        self.frames: list[tuple[float, int, str, bool]] = []
        page.on("websocket", lambda socket: socket.on("framereceived", self.received))

    def received(self, payload: str | bytes) -> None:
        if isinstance(payload, bytes):
            number, _, codec, flags = BROWSER_FRAME_HEADER.unpack_from(payload)
            key = bool(flags & worker_protocol.KEY_FRAME_FLAG)
            self.frames.append((time.monotonic(), number, worker_protocol.FRAME_CODECS[codec], key))


def decoded(page: Page) -> int:
    return int(page.locator("canvas").get_attribute("data-decoded") or 0)


def drawn_frame(page: Page) -> int:
    return int(page.locator("canvas").get_attribute("data-frame") or 0)


def viewer(browser: Any, platform: LivePlatform, session: PlaySession) -> tuple[Page, FramesSeen]:
    page = browser.new_context(base_url=platform.url).new_page()
    seen = FramesSeen(page)
    page_signed_in(page, platform, session.owner)
    page.goto(f"/play/session/{session.pk}/")
    return page, seen


def test_an_h264_stream_decodes_in_the_browser_reaches_a_second_viewer_and_survives_a_failover(
    browser: Any, tmp_path: Path
) -> None:
    platform = start_platform("--no-in-process-worker")
    workers = {name: worker_process(platform, name, tmp_path / f"{name}.log") for name in ("left", "right")}
    try:
        wait_until(lambda: platform.health()["inference_workers"]["connected"] == 2, timeout_seconds=60)
        session = PlaySessionFactory(engine="raycaster-video")
        first, first_seen = viewer(browser, platform, session)
        wait_until(lambda: decoded(first) > 10, timeout_seconds=30)
        assert (first.locator("canvas").get_attribute("width"), first.locator("canvas").get_attribute("height")) == (
            "640",
            "352",
        )
        assert first.locator("canvas").evaluate(PICTURE_SPREAD) > 40  # walls, floor and sky: not a blank canvas
        shown = drawn_frame(first)
        wait_until(lambda: drawn_frame(first) > shown + 5)
        # Both codecs as the page declares them decode here: H.264 above, and VP8, the fallback.
        supported = first.evaluate(
            "codecs => Promise.all(codecs.map(async (codec) => "
            "(await VideoDecoder.isConfigSupported({ codec, optimizeForLatency: true })).supported))",
            list(worker_protocol.WEBCODECS_CODECS.values()),
        )
        assert supported == [True, True]
        codecs = {codec for _, _, codec, _ in first_seen.frames}
        assert codecs == {"h264"}
        assert first_seen.frames[0][3]  # the stream is joined at a key frame

        # A second viewer, mid-stream, has a picture within one key-frame interval of its page loading.
        second, second_seen = viewer(browser, platform, session)
        loaded_at = time.monotonic()
        wait_until(lambda: decoded(second) > 0, timeout_seconds=10)
        assert time.monotonic() - loaded_at < VIDEO.key_frame_every_seconds
        assert second_seen.frames[0][3]
        assert second_seen.frames[0][1] > shown  # it joined a stream already going
        wait_until(lambda: decoded(second) > 5)

        # The worker dies; the session moves to the other one, whose new encoder starts with a key frame.
        assigned = PlaySession.objects.get(pk=session.pk).worker.name
        os.kill(workers[assigned].pid, signal.SIGKILL)
        killed_at, before = time.monotonic(), drawn_frame(first)
        decoded_before = decoded(first)
        wait_until(lambda: drawn_frame(first) > before + 20, timeout_seconds=30)
        assert PlaySession.objects.get(pk=session.pk).worker.name != assigned
        assert decoded(first) > decoded_before + 20
        assert first.locator("canvas").evaluate(PICTURE_SPREAD) > 40
        # The new worker's first frame follows the longest silence around the kill.
        around = [frame for frame in first_seen.frames if frame[0] > killed_at - 0.2]
        gaps = [(later[0] - earlier[0], index + 1) for index, (earlier, later) in enumerate(itertools.pairwise(around))]
        silence, resumed = max(gaps)
        assert silence > 0.15
        assert around[resumed][3], f"the first frame after the failover, {around[resumed][1]}, is not a key frame"
        numbers = [number for _, number, _, _ in first_seen.frames]
        assert numbers == sorted(set(numbers))  # frame numbers only rise, across the failover too
        wait_until(lambda: decoded(second) > 25)
    finally:
        for process in workers.values():
            process.kill()
            process.wait()
        platform.stop()
