"""Where the apps above the gallery add to its pages, subscribing in their AppConfig.ready."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.dispatch import Signal


@dataclass(frozen=True)
class PageSection:
    """A part of a gallery page another app draws: its template and that template's context."""

    template: str
    context: dict[str, Any] = field(default_factory=dict)


# A world's page is being shown (`listing`, `user`); a subscriber returns a PageSection or None.
world_page_shown = Signal()
