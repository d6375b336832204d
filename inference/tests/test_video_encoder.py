"""The worker's video encoder: a packet per frame, key frames first, when asked and periodically, decodable."""

from __future__ import annotations

import av
import numpy as np
import pytest

from inference.engine import RaycastVideoEngine, StepRequest, create_engine
from inference.protocol import WEBCODECS_CODECS
from inference.video import encoder as video_encoder
from inference.video.encoder import VideoConfig, VideoEncoder
from inference.world.state import Action

WIDTH, HEIGHT = 64, 48
DECODERS = {"h264": "h264", "vp8": "vp8"}  # FFmpeg's own decoders, not the encoders' libraries


def pictures(count: int) -> list[np.ndarray]:
    """A bar sliding over a fading background: every frame differs from the one before."""
    frames = []
    for index in range(count):
        picture = np.full((HEIGHT, WIDTH, 3), (index * 7) % 200, np.uint8)  # (H, W, 3)
        picture[:, (index * 3) % (WIDTH - 8) :][:, :8] = (250, 40, 40)
        frames.append(picture)
    return frames


@pytest.mark.parametrize("codec", ["h264", "vp8"])
def test_each_frame_is_one_packet_that_decodes_to_one_picture_and_only_the_first_is_a_key_frame(codec: str) -> None:
    encoder = VideoEncoder(codec, width=WIDTH, height=HEIGHT, frames_per_second=20)
    decoder = av.CodecContext.create(DECODERS[codec], "r")
    keys = []
    for picture in pictures(30):
        packet, key = encoder.encode(picture)
        keys.append(key)
        decoded = decoder.decode(av.Packet(packet))
        assert len(decoded) == 1  # one in, one out: no frame is held back
        assert (decoded[0].width, decoded[0].height) == (WIDTH, HEIGHT)
    assert keys == [True] + [False] * 29


@pytest.mark.parametrize("codec", ["h264", "vp8"])
def test_a_key_frame_asked_for_comes_within_the_gap_and_decodes_without_the_frames_before_it(codec: str) -> None:
    config = VideoConfig(key_frame_gap_seconds=0.25)  # 5 frames at 20 fps
    encoder = VideoEncoder(codec, width=WIDTH, height=HEIGHT, frames_per_second=20, config=config)
    frames = pictures(20)
    for picture in frames[:8]:
        encoder.encode(picture)
    encoder.key_frame_ask()
    packet, key = encoder.encode(frames[8])
    assert key
    # A viewer that joins here decodes it alone, and the delta after it, close to the pictures sent.
    late_viewer = av.CodecContext.create(DECODERS[codec], "r")
    first = late_viewer.decode(av.Packet(packet))[0].to_ndarray(format="rgb24")
    assert np.abs(first.astype(int) - frames[8]).mean() < 12
    delta, key = encoder.encode(frames[9])
    assert not key
    second = late_viewer.decode(av.Packet(delta))[0].to_ndarray(format="rgb24")
    assert np.abs(second.astype(int) - frames[9]).mean() < 12
    # Asked again at once, the next key frame waits out the gap: asks cannot make every frame a key frame.
    encoder.key_frame_ask()
    assert [encoder.encode(picture)[1] for picture in frames[10:15]] == [False, False, False, True, False]


def test_key_frames_come_periodically_without_being_asked_for() -> None:
    config = VideoConfig(key_frame_every_seconds=0.5)  # 10 frames at 20 fps
    encoder = VideoEncoder("h264", width=WIDTH, height=HEIGHT, frames_per_second=20, config=config)
    keys = [encoder.encode(picture)[1] for picture in pictures(25)]
    assert [index for index, key in enumerate(keys) if key] == [0, 10, 20]


def test_it_refuses_pictures_of_another_size_and_sizes_the_declared_level_does_not_hold() -> None:
    encoder = VideoEncoder("h264", width=WIDTH, height=HEIGHT, frames_per_second=20)
    with pytest.raises(ValueError, match=r"expected \(48, 64, 3\) uint8"):
        encoder.encode(np.zeros((HEIGHT, WIDTH + 2, 3), np.uint8))
    with pytest.raises(ValueError, match=r"larger than H\.264 level 3\.1"):
        VideoEncoder("h264", width=1920, height=1080, frames_per_second=20)
    with pytest.raises(ValueError, match="even width and height"):
        VideoEncoder("vp8", width=63, height=48, frames_per_second=20)
    with pytest.raises(ValueError, match="codec must be one of h264, vp8"):
        VideoEncoder("jpeg", width=WIDTH, height=HEIGHT, frames_per_second=20)


def test_the_video_raycaster_hands_over_pixels_of_its_size_for_the_worker_to_encode() -> None:
    engine = create_engine("raycaster-video")
    assert isinstance(engine, RaycastVideoEngine)
    assert (engine.facts.codec, engine.facts.width, engine.facts.height) == ("h264", 640, 352)
    session = engine.open_session({"seed": 21, "size": 12})
    frame = engine.step([StepRequest(session, int(Action.FORWARD), [])])[0]
    assert frame.jpeg == b""
    assert frame.pixels is not None
    assert frame.pixels.shape == (352, 640, 3)
    assert frame.pixels.dtype == np.uint8
    packet, key = VideoEncoder("h264", width=640, height=352, frames_per_second=20).encode(frame.pixels)
    assert key
    assert av.CodecContext.create("h264", "r").decode(av.Packet(packet))[0].height == 352


def test_the_h264_stream_is_the_profile_and_level_the_page_declares_to_its_decoder() -> None:
    packet, _ = VideoEncoder("h264", width=1280, height=720, frames_per_second=20).encode(
        np.zeros((720, 1280, 3), np.uint8)
    )
    # Annex B: the sequence parameter set (NAL type 7) leads the key frame; its first three bytes after the NAL
    # header are profile_idc, the constraint flags and level_idc, which an avc1.PPCCLL string spells in hex.
    start = packet.index(b"\x00\x00\x01\x67") + 4
    assert f"avc1.{packet[start : start + 3].hex().upper()}" == WEBCODECS_CODECS["h264"]


def test_a_build_without_an_h264_encoder_streams_vp8_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # An FFmpeg without libx264 (a distribution's, for its licence): the encoder FFmpeg would look for is absent.
    monkeypatch.setitem(video_encoder.ENCODERS, "h264", "libx264-not-in-this-build")
    encoder = VideoEncoder("h264", width=WIDTH, height=HEIGHT, frames_per_second=20)
    assert encoder.codec == "vp8"
    decoder = av.CodecContext.create("vp8", "r")
    for picture in pictures(3):
        packet, _ = encoder.encode(picture)
        assert len(decoder.decode(av.Packet(packet))) == 1
    monkeypatch.setitem(video_encoder.ENCODERS, "vp8", "libvpx-not-in-this-build")
    with pytest.raises(RuntimeError, match="encodes none of"):
        VideoEncoder("h264", width=WIDTH, height=HEIGHT, frames_per_second=20)
