"""The worker's video encoder: a video engine's pixels become H.264 or VP8 packets, one per frame, with PyAV.

One encoder per session, whose packets go unchanged to every viewer of the session. Tuned for latency as
WebRTC's software encoders are: no B-frames and no look-ahead, so a frame in is a packet out; key frames when a
viewer arrives (the platform asks), when the session opens (a new encoder, after a failover too), and
periodically. H.264 is libx264's constrained baseline (what `avc1.42C01F` declares to the page's WebCodecs
decoder); VP8 is libvpx at its realtime deadline, the fallback for an FFmpeg build without libx264.
"""

from __future__ import annotations

import fractions
from dataclasses import dataclass
from typing import cast

import av
import numpy as np
from av.video.frame import PictureType

from inference.protocol import WEBCODECS_CODECS

VIDEO_CODECS = tuple(WEBCODECS_CODECS)
ENCODERS = {"h264": "libx264", "vp8": "libvpx"}  # FFmpeg's encoder for each codec
# H.264 level 3.1's largest frame in 16x16 macroblocks (1280x720), the level WEBCODECS_CODECS declares.
MAX_MACROBLOCKS = 3600


@dataclass(frozen=True)
class VideoConfig:
    """How the worker encodes a video engine's frames."""

    # The longest a picture stays broken or a viewer waits for one if an ask is lost (a viewer's consumer asks
    # when it joins or falls behind); one frame in 40 at 20 fps is a key frame, a few percent more bytes.
    key_frame_every_seconds: float = 2.0
    # Asks for key frames closer together than this share one: many viewers arriving at once, or one that keeps
    # falling behind, cannot turn the stream into key frames only (each is several times a delta's size).
    key_frame_gap_seconds: float = 0.25
    # Bits a second per pixel a second: 0.1 gives about 450 kbit/s at 640x352x20, where the raycaster's walls
    # and floors show no blocking; x264 and libvpx hold it as an average (ABR), so a key frame may exceed it.
    bits_per_pixel: float = 0.1
    # libx264's fastest preset: 640x352 encodes in a few milliseconds a frame on one core, beside the engine.
    x264_preset: str = "ultrafast"
    # libvpx's speed for the realtime deadline: 8 is its fastest that keeps the picture clean at these rates.
    vp8_cpu_used: int = 8


CONFIG = VideoConfig()


def codec_encodable(wanted: str) -> str:
    """The codec a session streams in: the engine's, else the other where this FFmpeg build has no encoder for
    it (PyAV's wheels bundle both; an FFmpeg of a distribution may leave out libx264, whose licence is the GPL).
    Each frame names its codec, so the page decodes whichever comes."""
    for codec in (wanted, *(other for other in VIDEO_CODECS if other != wanted)):
        try:
            av.codec.Codec(ENCODERS[codec], "w")
        except av.codec.codec.UnknownCodecError:
            continue
        return codec
    raise RuntimeError(f"this FFmpeg build encodes none of {', '.join(VIDEO_CODECS)}")


class VideoEncoder:
    """One session's encoder: `encode` takes an (H, W, 3) uint8 RGB picture and returns its packet."""

    def __init__(self, codec: str, *, width: int, height: int, frames_per_second: int, config: VideoConfig = CONFIG):
        if codec not in VIDEO_CODECS:
            raise ValueError(f"codec must be one of {', '.join(VIDEO_CODECS)}, got {codec!r}")
        if width % 2 or height % 2:
            raise ValueError(f"4:2:0 video needs an even width and height, got {width}x{height}")
        if (width + 15) // 16 * ((height + 15) // 16) > MAX_MACROBLOCKS:
            raise ValueError(f"{width}x{height} is larger than H.264 level 3.1 holds (1280x720)")
        codec = codec_encodable(codec)
        self.codec, self.width, self.height = codec, width, height
        self.context = cast(av.VideoCodecContext, av.CodecContext.create(ENCODERS[codec], "w"))
        self.context.width, self.context.height, self.context.pix_fmt = width, height, "yuv420p"
        self.context.time_base = fractions.Fraction(1, frames_per_second)
        self.context.framerate = fractions.Fraction(frames_per_second, 1)
        self.context.bit_rate = int(config.bits_per_pixel * width * height * frames_per_second)
        self.context.max_b_frames = 0  # a B-frame waits for a later picture: a frame in would not be a packet out
        # Key frames are ours to place (periodic and asked for): the encoder's own scene-cut ones are turned off.
        self.context.gop_size = 10 * 60 * frames_per_second
        if codec == "h264":
            # zerolatency: no look-ahead, no frame threads (each would hold a frame back); Annex B with the
            # parameter sets repeated before each key frame, so a viewer can start at any key frame.
            self.context.options = {
                "preset": config.x264_preset,
                "tune": "zerolatency",
                "profile": "baseline",
                "level": "3.1",
                "sc_threshold": "0",
            }
        else:
            self.context.options = {
                "deadline": "realtime",
                "cpu-used": str(config.vp8_cpu_used),
                "lag-in-frames": "0",  # no look-ahead: a packet per frame
                "auto-alt-ref": "0",  # an alternate reference frame is a packet with no picture
            }
        self.key_frame_every = max(round(config.key_frame_every_seconds * frames_per_second), 1)
        self.key_frame_gap = max(round(config.key_frame_gap_seconds * frames_per_second), 1)
        self.frames = 0
        self.last_key_frame: int | None = None  # None: none encoded yet, so the first frame is one
        self.key_frame_asked = False

    def key_frame_ask(self) -> None:
        """A viewer arrived or fell behind: make a coming frame a key frame (within `key_frame_gap` frames)."""
        self.key_frame_asked = True

    def key_frame_due(self) -> bool:
        if self.last_key_frame is None:
            return True
        since = self.frames - self.last_key_frame
        return since >= self.key_frame_every or (self.key_frame_asked and since >= self.key_frame_gap)

    def encode(self, pixels: np.ndarray) -> tuple[bytes, bool]:
        """The packet of one picture (H, W, 3) uint8 RGB, and whether it is a key frame."""
        if pixels.shape != (self.height, self.width, 3) or pixels.dtype != np.uint8:
            raise ValueError(
                f"expected ({self.height}, {self.width}, 3) uint8 pixels, got {pixels.shape} {pixels.dtype}"
            )
        frame = av.VideoFrame.from_ndarray(pixels, format="rgb24").reformat(format="yuv420p")
        frame.pts = self.frames
        due = self.key_frame_due()
        # NONE lets the encoder choose: a delta, as gop_size and sc_threshold leave it no reason for a key frame.
        frame.pict_type = PictureType.I if due else PictureType.NONE
        packets = self.context.encode(frame)
        if len(packets) != 1:  # the options above make this impossible; a build that buffers would break it
            raise RuntimeError(f"the {self.codec} encoder returned {len(packets)} packets for one frame")
        packet = packets[0]
        key = bool(packet.is_keyframe)
        if due and not key:
            raise RuntimeError(f"the {self.codec} encoder made a delta frame where a key frame was forced")
        if key:
            self.last_key_frame, self.key_frame_asked = self.frames, False
        self.frames += 1
        return bytes(packet), key
