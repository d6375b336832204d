"""API plumbing shared by every app."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as ModelValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler


def api_exception_handler(error: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus Django's ValidationError (raised by model clean() in services) as a 400 by field, and
    a body over Django's limit (raised when DRF reads it) as a 413 that says the limit, not Django's HTML 400."""
    if isinstance(error, ModelValidationError):
        return Response(as_serializer_error(error), status=400)
    if isinstance(error, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response({"detail": f"the request body is over the limit of {limit} bytes"}, status=413)
    return exception_handler(error, context)


class NewestFirstPagination(CursorPagination):
    """Cursor pagination (stays fast deep into a list) over ids, which every table has and never change."""

    ordering = "-id"
