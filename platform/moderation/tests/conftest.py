from __future__ import annotations

from moderation.tests.fixtures import listed, moderator, publish, search_throttle_forgotten, tasks_run_inline

__all__ = ["listed", "moderator", "publish", "search_throttle_forgotten", "tasks_run_inline"]
