"""Uploaded images: what reaches storage is a real, modest raster image, re-encoded, under a name we chose.

Pillow decides what the bytes are (never the file name or the browser's content type): SVG and other
formats that can carry script are refused, and decompression bombs fail before they are decoded. What is
stored is the decoded pixels saved again in the detected format, so bytes riding along (an HTML page after
a PNG's end, a script in a GIF comment, metadata chunks) are gone, and its name is random with the
detected format's extension: a name chosen by whoever uploaded it (`cover.html`, `a/b.png`) is never kept.
Serving reads the type from the stored bytes again, so a file stored before these rules still cannot be
served as anything but an image.
"""

from __future__ import annotations

import io
import secrets
import warnings
from dataclasses import dataclass
from typing import IO, Any

from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import models
from django.http import FileResponse
from PIL import Image, ImageOps

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_IMAGE_SIDE = 4096
# Pillow's format name -> (extension, content type); nothing else is stored or served as an image.
ALLOWED_FORMATS = {
    "PNG": ("png", "image/png"),
    "JPEG": ("jpg", "image/jpeg"),
    "WEBP": ("webp", "image/webp"),
    "GIF": ("gif", "image/gif"),
}
# Image.info keys that change how the pixels look; every other key (text chunks, EXIF, ICC, comments) is dropped.
PIXEL_INFO_KEYS = ("transparency",)


@dataclass(frozen=True)
class ReencodedImage:
    """An image's pixels saved again by Pillow in the format they were read in."""

    data: bytes
    format: str

    @property
    def extension(self) -> str:
        return ALLOWED_FORMATS[self.format][0]

    def stored_name(self) -> str:
        """A fresh random file name with this format's extension, for storage."""
        return f"{secrets.token_hex(16)}.{self.extension}"


class ReencodedFile(ContentFile):
    """A re-encoded image ready for storage under its generated name; re-encoding it again is never needed."""


def image_validator(file: File) -> None:
    """Django field validator for every ImageField creators upload to."""
    image_reencoded(file)


def image_reencoded(file: IO[bytes] | File | bytes) -> ReencodedImage:
    """The image decoded and saved again in its own format (an animation keeps its first frame).

    ValidationError says why when it is too large, not an image we accept, or a decompression bomb.
    """
    stream = io.BytesIO(file) if isinstance(file, bytes) else file
    size = len(file) if isinstance(file, bytes) else file.size if isinstance(file, File) else None
    if size is not None and size > MAX_IMAGE_BYTES:
        raise ValidationError(f"the image is {size / 1048576:.1f} MiB; at most {MAX_IMAGE_BYTES // 1048576} MiB")
    position = stream.tell()
    try:
        with warnings.catch_warnings():
            # Pillow warns (rather than raises) between 1x and 2x its pixel limit: treat that as a bomb too.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(stream) as image:
                kind, (width, height) = image.format, image.size
                if kind not in ALLOWED_FORMATS:
                    raise ValidationError(f"{kind} images are not accepted; use PNG, JPEG, WebP or GIF")
                if max(width, height) > MAX_IMAGE_SIDE:
                    raise ValidationError(f"the image is {width}x{height}; at most {MAX_IMAGE_SIDE} pixels on a side")
                # A photo's EXIF orientation is applied to the pixels, since the EXIF itself is dropped.
                pixels = ImageOps.exif_transpose(image)
                pixels.info = {key: image.info[key] for key in PIXEL_INFO_KEYS if key in image.info}
                encoded = io.BytesIO()
                pixels.save(encoded, format=kind, **({"quality": 90} if kind in ("JPEG", "WEBP") else {}))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ValidationError("the image has far too many pixels") from None
    except (OSError, SyntaxError, ValueError, EOFError):
        raise ValidationError("the file is not an image we can read (PNG, JPEG, WebP or GIF)") from None
    finally:
        stream.seek(position)
    return ReencodedImage(encoded.getvalue(), kind)


def image_stored(data: bytes, *, folder: str) -> str:
    """Store an image's re-encoded bytes under a generated name in `folder`; its storage name."""
    image = image_reencoded(data)
    return default_storage.save(f"{folder}/{image.stored_name()}", ContentFile(image.data))


class ReencodedImageField(models.ImageField):
    """An ImageField that stores only re-encoded images, under generated names (see the module docstring)."""

    def clean(self, value: Any, model_instance: models.Model) -> Any:
        value = super().clean(value, model_instance)
        self.reencode_pending(value)
        return value

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        # A row saved without full_clean() still never stores the bytes it was given.
        self.reencode_pending(getattr(model_instance, self.attname))
        return super().pre_save(model_instance, add)

    @staticmethod
    def reencode_pending(file: Any) -> None:
        """Replace a new, unsaved upload's content and name with its re-encoding; saved files are left alone."""
        if not file or file._committed or isinstance(file.file, ReencodedFile):
            return
        image = image_reencoded(file.file)
        file.file = ReencodedFile(image.data, name=image.stored_name())
        file.name = file.file.name


def image_response(name: str) -> FileResponse:
    """A stored image served as what its bytes are, never as what its name says.

    An image we accept goes inline with its own content type and a neutral file name; anything else (a file
    stored before uploads were re-encoded, say) is offered as a download. nosniff stops a browser guessing.
    """
    file = default_storage.open(name, "rb")
    try:
        with Image.open(file) as image:
            kind = image.format
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError):
        kind = None
    file.seek(0)
    if kind in ALLOWED_FORMATS:
        extension, content_type = ALLOWED_FORMATS[kind]
        response = FileResponse(file, content_type=content_type)
        response["Content-Disposition"] = f'inline; filename="image.{extension}"'
    else:
        response = FileResponse(file, content_type="application/octet-stream")
        response["Content-Disposition"] = 'attachment; filename="download"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
