"""Reference-image palettes: an image's dominant colours shape the world."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from inference.world.palette import apply_reference_image, palette_from_image
from inference.world.renderer import render
from inference.world.spec import WorldSpec
from inference.world.state import initial_state


def image_bytes(top: tuple[int, int, int], middle: tuple[int, int, int], bottom: tuple[int, int, int]) -> bytes:
    """A landscape in three bands, with a little noise so the quantiser has real work to do."""
    pixels = np.zeros((90, 120, 3), dtype=np.int16)
    pixels[:30], pixels[30:60], pixels[60:] = top, middle, bottom
    pixels += np.random.default_rng(0).integers(-6, 7, pixels.shape, dtype=np.int16)
    buffer = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


SUNSET = image_bytes((250, 140, 60), (120, 40, 90), (60, 40, 30))
FOREST = image_bytes((150, 200, 240), (30, 110, 40), (90, 70, 40))


def test_sky_and_floor_come_from_the_top_and_bottom_of_the_image() -> None:
    colors = palette_from_image(SUNSET)

    assert np.abs(np.subtract(colors.sky, (250, 140, 60))).max() < 20
    assert np.abs(np.subtract(colors.floor, (60, 40, 30))).max() < 20
    assert any(np.abs(np.subtract(color, (120, 40, 90))).max() < 20 for color in colors.palette)


def test_two_images_give_two_different_looking_worlds() -> None:
    base = {"seed": 5}
    sunset_spec = WorldSpec.from_dict(apply_reference_image(base, SUNSET))
    forest_spec = WorldSpec.from_dict(apply_reference_image(base, FOREST))

    assert sunset_spec.palette != forest_spec.palette
    sunset_frame = render(initial_state(sunset_spec), sunset_spec).astype(np.float32)
    forest_frame = render(initial_state(forest_spec), forest_spec).astype(np.float32)
    # Same map and pose, different colours: the mean colours differ clearly.
    assert np.abs(sunset_frame.mean(axis=(0, 1)) - forest_frame.mean(axis=(0, 1))).max() > 25


def test_it_refuses_bytes_that_are_not_an_image() -> None:
    with pytest.raises(ValueError, match="reference image cannot be read"):
        palette_from_image(b"definitely not a picture")
