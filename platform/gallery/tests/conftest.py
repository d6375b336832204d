from __future__ import annotations

from moderation.tests.fixtures import listed, moderator, publish, tasks_run_inline

__all__ = ["listed", "moderator", "publish", "tasks_run_inline"]
