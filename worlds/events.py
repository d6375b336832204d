"""What authoring tells the apps above it, which subscribe in their AppConfig.ready.

Sent inside the transaction that made the change, so that what a subscriber writes commits or rolls back with
it (a published version is never left without its review); a subscriber's side effects go through on_commit.
"""

from __future__ import annotations

from django.dispatch import Signal

# A world's working copy was frozen as a new version (`version`), pending review.
version_published = Signal()
