"""Palette from a creator's reference image: its dominant colours become the world's walls, sky and floor.

Dominant colours come from Pillow's median-cut quantiser (Heckbert, "Color image quantization for frame buffer
display", 1982). The sky takes the dominant colour of the image's top third and the floor that of its bottom
third, as in most photographs and paintings of places; the walls take the image's most common colours.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, cast

from PIL import Image, UnidentifiedImageError

from inference.world.events import Color


@dataclass(frozen=True)
class PaletteConfig:
    """How reference images are read."""

    # Dominant colours survive shrinking, and quantising a small image is quick where a full photograph is not.
    analysis_size: int = 96
    wall_colors: int = 4  # one per texture kind (brick, stone, planks, metal)
    # Summed RGB difference under which a wall colour counts as the sky's or floor's and is passed over.
    similar_distance: int = 60
    # Refuse images larger than a 50-megapixel photograph before decoding them: a decompression bomb guard.
    max_pixels: int = 50_000_000


CONFIG = PaletteConfig()


@dataclass(frozen=True)
class ReferencePalette:
    """The colours a reference image gives a world."""

    palette: tuple[Color, ...]
    sky: Color
    floor: Color


def _dominant_colors(image: Image.Image, count: int) -> list[Color]:
    """The image's `count` median-cut colours, most common first."""
    quantized = image.quantize(colors=count, method=Image.Quantize.MEDIANCUT)
    flat_palette: list[int] = quantized.getpalette() or []
    # A quantised (palette-mode) image counts palette indices: [(pixels, palette index)].
    counts = sorted(cast("list[tuple[int, int]]", quantized.getcolors() or []), reverse=True)
    return [(flat_palette[3 * index], flat_palette[3 * index + 1], flat_palette[3 * index + 2]) for _, index in counts]


def _similar(first: Color, second: Color) -> bool:
    return sum(abs(a - b) for a, b in zip(first, second, strict=True)) < CONFIG.similar_distance


def palette_from_image(image_bytes: bytes) -> ReferencePalette:
    """Walls, sky and floor colours for the image in `image_bytes`; ValueError if it is not a readable image."""
    try:
        opened = Image.open(io.BytesIO(image_bytes))
        if opened.width * opened.height > CONFIG.max_pixels:
            raise ValueError(f"reference image is too large ({opened.width}x{opened.height})")
        opened.draft("RGB", (CONFIG.analysis_size, CONFIG.analysis_size))  # JPEG decodes at a fraction of size
        image = opened.convert("RGB")
    except (UnidentifiedImageError, OSError) as error:
        raise ValueError(f"reference image cannot be read: {error}") from error
    image.thumbnail((CONFIG.analysis_size, CONFIG.analysis_size))
    third = max(image.height // 3, 1)
    sky = _dominant_colors(image.crop((0, 0, image.width, third)), 4)[0]
    floor = _dominant_colors(image.crop((0, image.height - third, image.width, image.height)), 4)[0]
    # Quantise to a few more colours than needed, then prefer those unlike the sky and floor, so walls stand out.
    candidates = _dominant_colors(image, CONFIG.wall_colors + 2)
    distinct = [color for color in candidates if not (_similar(color, sky) or _similar(color, floor))]
    walls = (distinct + [color for color in candidates if color not in distinct])[: CONFIG.wall_colors]
    return ReferencePalette(palette=tuple(walls), sky=sky, floor=floor)


def apply_reference_image(spec: dict[str, Any], image_bytes: bytes) -> dict[str, Any]:
    """A copy of the spec dict whose palette, sky and floor come from the reference image."""
    colors = palette_from_image(image_bytes)
    return {
        **spec,
        "palette": [list(color) for color in colors.palette],
        "sky": list(colors.sky),
        "floor": list(colors.floor),
    }
