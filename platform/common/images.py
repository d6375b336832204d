"""Checks on uploaded images: what reaches storage must be a real, modest raster image.

Pillow decides what the bytes are (never the file name or the browser's content type): SVG and other
formats that can carry script are refused, and decompression bombs fail before they are decoded.
"""

from __future__ import annotations

import warnings

from django.core.exceptions import ValidationError
from django.core.files import File
from PIL import Image

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_IMAGE_SIDE = 4096
ALLOWED_FORMATS = {"PNG", "JPEG", "WEBP", "GIF"}


def image_validator(file: File) -> None:
    """Django field validator for every ImageField creators upload to."""
    if file.size > MAX_IMAGE_BYTES:
        raise ValidationError(f"the image is {file.size / 1048576:.1f} MiB; at most {MAX_IMAGE_BYTES // 1048576} MiB")
    position = file.tell()
    try:
        with warnings.catch_warnings():
            # Pillow warns (rather than raises) between 1x and 2x its pixel limit: treat that as a bomb too.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(file) as image:
                kind, (width, height) = image.format, image.size
                image.verify()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ValidationError("the image has far too many pixels") from None
    except (OSError, SyntaxError, ValueError):
        raise ValidationError("the file is not an image we can read (PNG, JPEG, WebP or GIF)") from None
    finally:
        file.seek(position)
    if kind not in ALLOWED_FORMATS:
        raise ValidationError(f"{kind} images are not accepted; use PNG, JPEG, WebP or GIF")
    if max(width, height) > MAX_IMAGE_SIDE:
        raise ValidationError(f"the image is {width}x{height}; at most {MAX_IMAGE_SIDE} pixels on a side")
