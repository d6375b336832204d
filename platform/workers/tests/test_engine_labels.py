"""The studio's engine choices say what each engine draws, and name a video codec."""

from __future__ import annotations

import pytest

from workers.selectors import engine_labels


@pytest.mark.django_db
def test_the_video_raycaster_is_offered_with_its_size_and_codec_and_a_jpeg_engine_without_one() -> None:
    labels = engine_labels()
    assert labels["raycaster-video"] == "raycaster-video: 640x352 at 20 fps, h264, cpu"
    assert labels["raycaster"] == "raycaster: 256x256 at 20 fps, cpu"
