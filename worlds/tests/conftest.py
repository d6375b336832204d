"""Fixtures the authoring tests share: a creator and an API client signed in as them."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from accounts.models import User
from accounts.tests.factories import UserFactory


@pytest.fixture
def creator() -> User:
    return UserFactory()


@pytest.fixture
def api(creator: User) -> APIClient:
    client = APIClient()
    client.force_authenticate(creator)
    return client
