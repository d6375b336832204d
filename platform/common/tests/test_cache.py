"""The Redis cache backend keeps one redis-py client per connection pool, and works as Django's does."""

from __future__ import annotations

import os
import uuid

import pytest

from common.cache import RedisCacheClientsKept

pytestmark = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="it talks to Redis (set REDIS_URL)")


def test_the_cache_reads_and_writes_through_one_kept_client() -> None:
    cache = RedisCacheClientsKept(os.environ["REDIS_URL"], {})
    key = f"test-cache-{uuid.uuid4()}"
    cache.set(key, {"listing": 1}, 30)
    assert cache.get(key) == {"listing": 1}
    assert cache.get_many([key, f"{key}-missing"]) == {key: {"listing": 1}}
    cache.delete(key)
    assert cache.get(key) is None
    client = cache._cache  # the RedisCacheClientKept Django's RedisCache builds on first use
    assert client.get_client(key) is client.get_client(key, write=True)
