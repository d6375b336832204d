"""Start-up checks: a process that serves or works refuses to start when a configured service is unreachable."""

from __future__ import annotations

import kombu
import redis
from django.conf import settings
from django.db import DatabaseError, connection

from common.configuration import ConfigurationError, redacted


def services_reachable_or_exit() -> None:
    """Raise a ConfigurationError (one clear line) naming the variable whose service does not answer."""
    if settings.REDIS_URL:
        try:
            redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=3, socket_timeout=3).ping()
        except redis.RedisError as error:
            raise ConfigurationError(
                "REDIS_URL", f"names an unreachable Redis at {redacted(settings.REDIS_URL)} ({error})"
            ) from None
    broker_url = settings.CELERY_BROKER_URL
    if not settings.CELERY_TASK_ALWAYS_EAGER and broker_url != settings.REDIS_URL:
        try:
            with kombu.Connection(broker_url, connect_timeout=3) as broker:
                broker.ensure_connection(max_retries=1)
        except Exception as error:  # kombu raises whatever its transport's driver raises
            raise ConfigurationError(
                "CELERY_BROKER_URL", f"names an unreachable broker at {redacted(broker_url)} ({error})"
            ) from None
    try:
        if getattr(connection, "pool", None):  # PostgreSQL's backend pools; SQLite's has no such attribute
            # One plain connection: the pool would retry in the background until its timeout, logging each try.
            with connection.wrap_database_errors:
                connection.Database.connect(**connection.get_connection_params()).close()
            return
        connection.ensure_connection()
        if connection.vendor == "sqlite":
            # WAL lets pages read while sessions write. The mode is stored in the file, so it is set once, here:
            # switching it on every new connection takes a lock that busy connections turn into "database is locked".
            with connection.cursor() as cursor:
                cursor.execute("PRAGMA journal_mode=WAL")
    except DatabaseError as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        variable = "DATABASE_URL" if not settings.EMBEDDED else "WORLDLOOM_DATA_DIR"
        raise ConfigurationError(variable, f"names a database that cannot be reached ({reason})") from None
    finally:
        connection.close()
