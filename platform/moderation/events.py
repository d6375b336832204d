"""What moderation tells the apps above it, which subscribe in their AppConfig.ready.

Sent inside the moderator's transaction, so that a subscriber's writes commit or roll back with the decision.
"""

from __future__ import annotations

from django.dispatch import Signal

# A world was taken down (`world`, `reason`); each subscriber returns how many play sessions it ended.
world_taken_down = Signal()
