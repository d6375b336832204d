"""The Redis cache backend the platform uses: Django's, keeping its redis-py client."""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class RedisCacheClientKept(RedisCacheClient):
    """Django's client builds a redis-py client for every call, filling its table of reply parsers each time,
    and a page reads the cache several times. A redis-py client is safe to share; one is kept for each connection
    pool."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCacheClientsKept(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClientKept
