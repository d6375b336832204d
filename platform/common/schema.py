"""The OpenAPI schema's naming, kept apart from common.apis: DRF imports that module while it loads its
settings, and drf-spectacular's AutoSchema imports DRF's views, which would make the import circular."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema


class ViewNamedAutoSchema(AutoSchema):
    """Names each API's nested Input/Output serializers after the API in the schema ("MeApiOutput").

    The style guide nests serializers in the view that uses them, so many are called OutputSerializer;
    drf-spectacular would otherwise give them all one component name and a wrong schema.
    """

    def _get_serializer_name(self, serializer: Any, direction: str, bypass_extensions: bool = False) -> str:
        name = super()._get_serializer_name(serializer, direction, bypass_extensions)
        serializer_class = type(getattr(serializer, "child", serializer))
        outer, _, inner = serializer_class.__qualname__.rpartition(".")
        if outer and name == inner.removesuffix("Serializer"):
            return outer.replace(".", "") + name
        return name
