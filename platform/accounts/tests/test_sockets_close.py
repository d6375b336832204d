"""Every way a sign-in ends reaches the person's open play sockets (the receivers in accounts.signals)."""

from __future__ import annotations

from typing import Any

import pytest
from allauth.account import signals as allauth_signals
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import signals as auth_signals

from accounts.models import User
from config.routing import application
from play.protocol import CLOSE_SIGNED_OUT
from play.tests.factories import PlaySessionFactory
from tests.fixtures import cookie_for

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("database_connections_closed_after", "channel_layers_closed_after"),
]


@pytest.mark.parametrize(
    ("signal", "reason"),
    [
        (auth_signals.user_logged_out, "you signed out"),
        (allauth_signals.password_changed, "your password changed; sign in again"),
        (allauth_signals.password_set, "your password changed; sign in again"),
        (allauth_signals.password_reset, "your password changed; sign in again"),
    ],
)
async def test_a_sign_in_ending_closes_the_person_s_play_sockets(signal: Any, reason: str) -> None:
    session = await database_sync_to_async(PlaySessionFactory)(status="ended")
    owner = await database_sync_to_async(lambda: session.owner)()
    headers = [
        (b"host", b"127.0.0.1"),
        (b"origin", b"http://127.0.0.1"),
        (b"cookie", (await database_sync_to_async(cookie_for)(owner)).encode()),
    ]
    communicator = WebsocketCommunicator(application, f"/ws/play/{session.pk}/", headers=headers)
    assert (await communicator.connect())[0]
    await communicator.receive_json_from()
    await database_sync_to_async(signal.send)(sender=User, request=None, user=owner)
    assert await communicator.receive_json_from(timeout=2) == {"type": "error", "error": reason}
    assert await communicator.receive_output(timeout=2) == {"type": "websocket.close", "code": CLOSE_SIGNED_OUT}
    await communicator.disconnect()  # ends the consumer before this test's event loop closes
