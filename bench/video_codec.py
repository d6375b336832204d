"""What video costs and saves against one JPEG a frame, on this CPU: encode time, bytes a second, picture quality.

The frames are a walk through a demo world (frost-ruins, with falling snow) as the raycaster draws it at
640x352 (the video world models' size) and 1280x720, with held keys changing every few frames. Each codec
encodes them as the worker does (inference.video.encoder.VideoEncoder: H.264 constrained baseline and VP8, their
realtime settings, key frames every 2 s); its packets are decoded with FFmpeg's decoders and compared with the
rendered frames (PSNR over RGB, the mean of the frames'). JPEG is then encoded at the quality whose mean PSNR
comes nearest H.264's, so `bytes_per_second_*` compares the two at the same picture quality; at 20 frames a
second, the worker's rate.
"""

from __future__ import annotations

import io
import json
import math
import statistics
import time
from pathlib import Path

import av
import numpy as np
from PIL import Image

from inference.engine import RaycastVideoEngine, StepRequest, encode_jpeg
from inference.video.encoder import VideoEncoder
from inference.world.state import Action

WORLD = Path(__file__).resolve().parent.parent / "worlds" / "demo_content" / "frost-ruins.json"
SIZES = ((640, 352), (1280, 720))
FRAMES_PER_SECOND = 20
KEYS = [Action.FORWARD, Action.FORWARD | Action.TURN_LEFT, Action.STRAFE_RIGHT, Action.TURN_RIGHT, Action.BACK]


def run(quick: bool) -> dict[str, float]:
    count = 20 if quick else 100  # 100: 5 s of play, two and a half key-frame intervals
    figures: dict[str, float] = {}
    for width, height in SIZES:
        size = f"{width}x{height}"
        frames, render_ms = walk(width, height, count)
        # What one core of a worker spends on a frame of raycaster-video: drawing it, then encoding it as H.264.
        figures[f"render_ms_p50_raycaster_{size}"] = statistics.median(render_ms)
        for codec in ("h264", "vp8"):
            packets, encode_ms = encoded(codec, frames)
            figures[f"encode_ms_p50_{codec}_{size}"] = statistics.median(encode_ms)
            figures[f"bytes_per_second_{codec}_{size}"] = mean_bytes(packets) * FRAMES_PER_SECOND
            figures[f"psnr_db_{codec}_{size}"] = mean_psnr(frames, decoded(codec, packets))
        quality, jpegs = jpeg_matching(frames, figures[f"psnr_db_h264_{size}"])
        figures[f"jpeg_quality_{size}"] = float(quality)
        figures[f"bytes_per_second_jpeg_{size}"] = mean_bytes(jpegs) * FRAMES_PER_SECOND
        figures[f"psnr_db_jpeg_{size}"] = mean_psnr(frames, [jpeg_pixels(jpeg) for jpeg in jpegs])
        figures[f"jpeg_to_h264_bytes_{size}"] = (
            figures[f"bytes_per_second_jpeg_{size}"] / figures[f"bytes_per_second_h264_{size}"]
        )
    return figures


def walk(width: int, height: int, count: int) -> tuple[list[np.ndarray], list[float]]:
    """`count` frames (H, W, 3) uint8 of a walk through the demo world, as the video raycaster hands them over,
    and the ms each step took."""
    engine = RaycastVideoEngine(width=width, height=height)
    session = engine.open_session(json.loads(WORLD.read_text())["world"]["engine_parameters"])
    frames, step_ms = [], []
    for tick in range(count):
        started = time.perf_counter()
        frame = engine.step([StepRequest(session, int(KEYS[(tick // 8) % len(KEYS)]), [])])[0]
        step_ms.append((time.perf_counter() - started) * 1000)
        assert frame.pixels is not None
        frames.append(frame.pixels)
    return frames, step_ms


def encoded(codec: str, frames: list[np.ndarray]) -> tuple[list[bytes], list[float]]:
    """Each frame's packet and its encode time in ms (colour conversion included, as the worker pays it)."""
    height, width, _ = frames[0].shape
    encoder = VideoEncoder(codec, width=width, height=height, frames_per_second=FRAMES_PER_SECOND)
    packets, encode_ms = [], []
    for pixels in frames:
        started = time.perf_counter()
        packet, _ = encoder.encode(pixels)
        encode_ms.append((time.perf_counter() - started) * 1000)
        packets.append(packet)
    return packets, encode_ms


def decoded(codec: str, packets: list[bytes]) -> list[np.ndarray]:
    decoder = av.CodecContext.create(codec, "r")  # FFmpeg's own h264 and vp8 decoders
    pictures = []
    for packet in packets:
        (picture,) = decoder.decode(av.Packet(packet))
        pictures.append(picture.to_ndarray(format="rgb24"))
    return pictures


def jpeg_matching(frames: list[np.ndarray], target_psnr: float) -> tuple[int, list[bytes]]:
    """The JPEG quality (5..95, as the engines' 4:2:0) whose mean PSNR is nearest `target_psnr`, and the frames at
    it. PSNR rises with quality, so a bisection finds it in seven encodes of the sequence."""
    low, high = 5, 95
    while high - low > 1:
        middle = (low + high) // 2
        if mean_psnr(frames, [jpeg_pixels(encode_jpeg(frame, middle)) for frame in frames]) < target_psnr:
            low = middle
        else:
            high = middle
    candidates = {quality: [encode_jpeg(frame, quality) for frame in frames] for quality in (low, high)}
    quality = min(
        candidates,
        key=lambda q: abs(mean_psnr(frames, [jpeg_pixels(jpeg) for jpeg in candidates[q]]) - target_psnr),
    )
    return quality, candidates[quality]


def jpeg_pixels(jpeg: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))


def mean_psnr(originals: list[np.ndarray], pictures: list[np.ndarray]) -> float:
    psnrs = []
    for original, picture in zip(originals, pictures, strict=True):
        error = float(np.mean((original.astype(np.float32) - picture.astype(np.float32)) ** 2))
        psnrs.append(10 * math.log10(255**2 / max(error, 1e-10)))
    return statistics.fmean(psnrs)


def mean_bytes(pictures: list[bytes]) -> float:
    return statistics.fmean(len(picture) for picture in pictures)
