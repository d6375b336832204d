"""Reading and checking configuration from the environment, failing with one clear line.

A wrong variable must stop the process at start with a sentence that names it, not a traceback from deep
inside a driver: `ConfigurationError` is a `SystemExit`, so Python prints just its message and exits 1.
"""

from __future__ import annotations

import warnings
from typing import Any
from urllib.parse import urlsplit

import environ

SUPPORTED_DATABASE_ENGINES = {"django.db.backends.postgresql", "django.db.backends.sqlite3"}


class ConfigurationError(SystemExit):
    """A setting read from the environment is missing, malformed or names something unreachable."""

    def __init__(self, variable: str, problem: str) -> None:
        self.variable = variable
        super().__init__(f"worldloom: configuration error: {variable} {problem}")


def database_from_url(variable: str, url: str) -> dict[str, Any]:
    """Django's DATABASES entry for `url`, or a ConfigurationError naming `variable`."""
    with warnings.catch_warnings():
        # django-environ only warns on an unknown scheme and returns a config Django cannot use.
        warnings.simplefilter("ignore")
        try:
            config = environ.Env.db_url_config(url)
        except ValueError as error:
            raise ConfigurationError(
                variable, f"is malformed ({error}); expected postgres://USER@HOST:PORT/NAME"
            ) from None
    if config.get("ENGINE") not in SUPPORTED_DATABASE_ENGINES:
        raise ConfigurationError(variable, f"is malformed: {redacted(url)!r} is not a postgres:// (or sqlite://) URL")
    if not config.get("NAME"):
        raise ConfigurationError(variable, f"is malformed: {redacted(url)!r} names no database")
    return config


def redis_url_checked(variable: str, url: str) -> str:
    """`url` when it is empty or a redis:// URL; a ConfigurationError naming `variable` otherwise."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading the port is what validates it
    except ValueError as error:
        raise ConfigurationError(variable, f"is malformed ({error})") from None
    if parts.scheme not in {"redis", "rediss", "unix"} or not (parts.hostname or parts.path):
        raise ConfigurationError(variable, f"is malformed: {redacted(url)!r} is not a redis:// URL")
    return url


def redacted(url: str) -> str:
    """`url` with any password replaced, fit for an error message or a log."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return parts._replace(netloc=netloc).geturl()
    return url
