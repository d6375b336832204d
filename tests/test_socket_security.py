"""The play socket under attack, against a real daphne: hijacking, signed-out players, malformed floods."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from accounts.tests.factories import PASSWORD
from play.models import PlaySession, SessionEvent
from play.protocol import CLOSE_SIGNED_OUT, MAX_MESSAGE_BYTES
from play.tests.factories import PlaySessionFactory
from tests.fixtures import LivePlatform, cookie_for

pytestmark = pytest.mark.slow

# daphne's own limit on one WebSocket message (its Server default, which `manage.py serve` keeps).
DAPHNE_MAX_MESSAGE_BYTES = 1024 * 1024
ATTEMPTS = 100
# RSS wobbles by up to about 6 MiB as the allocator settles around the 1 MiB messages and Django's caches fill;
# a leak of one message's size per attempt would be 100 MiB, and of 20 KiB per message kept, 10 MiB.
RSS_GROWTH_ALLOWED_BYTES = 8 * 1024 * 1024


def ended_session() -> PlaySession:
    """A session whose owner may connect, with no worker rendering for it: the only work is the test's own."""
    return PlaySessionFactory(status="ended")


def headers_for(platform: LivePlatform, cookie: str, origin: str | None = "") -> dict[str, str]:
    headers = {"Cookie": cookie}
    if origin is not None:
        headers["Origin"] = origin or platform.url
    return headers


async def handshake_status(
    platform: LivePlatform, session: PlaySession, headers: dict[str, str], path: str = "/ws/play/{}/"
) -> int:
    try:
        async with websockets.connect(platform.ws_url + path.format(session.pk), additional_headers=headers):
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


# What a page elsewhere (or a script) might send with a stolen ride on the player's cookie.
FOREIGN_ORIGINS = [
    "https://evil.example",
    "http://127.0.0.1.evil.example",  # a look-alike that starts with an allowed host
    "null",  # a sandboxed iframe or a file:// page
    None,  # no Origin at all: browsers always send one, so this is a script, not a page of ours
]


def near_origins(platform: LivePlatform) -> list[str]:
    """Origins that share the site's host but not its scheme or port: an allowed host is not an origin."""
    scheme, _, host_and_port = platform.url.partition("://")
    host, _, port = host_and_port.partition(":")
    return ["http://localhost:1", f"{'https' if scheme == 'http' else 'http'}://{host}:{port}", f"{scheme}://{host}"]


def test_a_valid_cookie_from_a_foreign_origin_is_refused_at_the_handshake(live_platform: LivePlatform) -> None:
    session = ended_session()
    cookie = cookie_for(session.owner)
    assert asyncio.run(handshake_status(live_platform, session, headers_for(live_platform, cookie))) == 101
    for origin in FOREIGN_ORIGINS + near_origins(live_platform):
        refused = asyncio.run(handshake_status(live_platform, session, headers_for(live_platform, cookie, origin)))
        assert refused == 403, origin


def test_a_socket_to_an_unrouted_path_gets_403_not_a_server_error(live_platform: LivePlatform) -> None:
    session = ended_session()
    headers = headers_for(live_platform, cookie_for(session.owner))
    for path in (f"/ws/play/{str(session.pk).upper()}/", "/ws/play/not-a-session/", "/ws/elsewhere/"):
        assert asyncio.run(handshake_status(live_platform, session, headers, path=path)) == 403, path


def logged_in_browser(platform: LivePlatform, cookie: str) -> requests.Session:
    browser = requests.Session()
    name, _, value = cookie.partition("=")
    browser.cookies.set(name, value)
    return browser


def cookie_signed_in(platform: LivePlatform, cookie: str) -> bool:
    return requests.get(f"{platform.url}/api/accounts/me/", headers={"Cookie": cookie}, timeout=10).ok


def csrf_token(browser: requests.Session, url: str) -> str:
    page = browser.get(url, timeout=10)
    page.raise_for_status()
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)


def log_out(platform: LivePlatform, cookie: str) -> None:
    browser = logged_in_browser(platform, cookie)
    url = f"{platform.url}/accounts/logout/"
    answer = browser.post(url, data={"csrfmiddlewaretoken": csrf_token(browser, url)}, timeout=10)
    assert answer.status_code == 200  # after the redirect home
    assert not cookie_signed_in(platform, cookie)


def change_password(platform: LivePlatform, cookie: str) -> None:
    browser = logged_in_browser(platform, cookie)
    url = f"{platform.url}/accounts/password/change/"
    form = {
        "csrfmiddlewaretoken": csrf_token(browser, url),
        "oldpassword": PASSWORD,
        "password1": "a-new-and-longer-passphrase",
        "password2": "a-new-and-longer-passphrase",
    }
    answer = browser.post(url, data=form, timeout=10, allow_redirects=False)
    assert answer.status_code == 302, answer.text[:500]


@pytest.mark.parametrize(
    ("end_sign_in", "reason"),
    # A password change logs the player out too (ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE): whichever comes first closes.
    [(log_out, "you signed out"), (change_password, "you signed out|your password changed")],
)
def test_a_player_s_socket_closes_within_two_seconds_of_their_sign_in_ending(
    live_platform: LivePlatform, end_sign_in: Any, reason: str
) -> None:
    """Driven over HTTP, so the signal fires in the daphne process that holds the socket, as in production."""
    session = ended_session()
    cookie = cookie_for(session.owner)

    async def watch() -> tuple[float, list[str], int]:
        url = f"{live_platform.ws_url}/ws/play/{session.pk}/"
        async with websockets.connect(url, additional_headers=headers_for(live_platform, cookie)) as socket:
            assert json.loads(await socket.recv())["type"] == "welcome"
            await asyncio.to_thread(end_sign_in, live_platform, cookie)
            ended_at = time.monotonic()
            errors = []
            async with asyncio.timeout(2):
                try:
                    while True:
                        errors.append(json.loads(await socket.recv())["error"])
                except ConnectionClosed as closed:
                    return time.monotonic() - ended_at, errors, closed.rcvd.code

    seconds, errors, code = asyncio.run(watch())
    assert seconds < 2
    assert code == CLOSE_SIGNED_OUT
    assert any(re.fullmatch(reason, error.split(";")[0]) for error in errors), errors
    # And the old cookie opens nothing any more.
    assert asyncio.run(handshake_status(live_platform, session, headers_for(live_platform, cookie))) == 403


def resident_bytes(pid: int) -> int:
    """The process's resident set size, from /proc (VmRSS is in KiB)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1)) * 1024


async def answers_to(socket: Any, messages: list[str | bytes]) -> list[dict[str, Any]]:
    for message in messages:
        await socket.send(message)
    async with asyncio.timeout(30):
        return [json.loads(await socket.recv()) for _ in messages]


async def sent_and_answered(socket: Any, message: str) -> str | bytes:
    await socket.send(message)
    return await socket.recv()


async def bad_messages_round(
    platform: LivePlatform, session: PlaySession, cookie: str, attempts: int, highest_seq: int
) -> None:
    """`attempts` of each kind of bad message; every one answered with an error or, over daphne's limit, a close.
    Inputs sent out of order count down from `highest_seq`."""
    url = f"{platform.ws_url}/ws/play/{session.pk}/"
    headers = headers_for(platform, cookie)
    kinds: dict[str, list[str | bytes]] = {
        f"at most {MAX_MESSAGE_BYTES}": [json.dumps({"type": "prompt", "seq": 1, "text": "x" * MAX_MESSAGE_BYTES})]
        * attempts,
        "not valid JSON": ['{"type": "prompt", "seq": ' + str(n) for n in range(attempts)],
        "unknown message type": [json.dumps({"type": f"teleport-{n}", "seq": 1}) for n in range(attempts)],
        "binary messages": [bytes([n % 256]) * (n + 1) for n in range(attempts)],
    }
    async with websockets.connect(url, additional_headers=headers) as socket:
        await socket.recv()  # welcome
        for complaint, messages in kinds.items():
            answers = await answers_to(socket, messages)
            assert all(answer["type"] == "error" and complaint in answer["error"] for answer in answers), complaint
        # Out of order: `seq` only names an input for deduplication (PROTOCOL.md), so going backwards is a new
        # input each time and a resend is a duplicate; half a round each, within the rate limit's burst.
        backwards = [json.dumps({"type": "pause", "seq": highest_seq - n}) for n in range(attempts // 2)]
        answers = await answers_to(socket, backwards)
        assert [(answer["type"], answer["duplicate"]) for answer in answers] == [("accepted", False)] * len(backwards)
        await asyncio.sleep(attempts / 2 / 30 + 0.2)  # the bucket refills at 30 inputs a second
        answers = await answers_to(socket, backwards)
        assert [(answer["type"], answer["duplicate"]) for answer in answers] == [("accepted", True)] * len(backwards)
    over_daphne = "x" * (DAPHNE_MAX_MESSAGE_BYTES + 1)
    for _ in range(attempts):
        async with websockets.connect(url, additional_headers=headers, max_size=None) as socket:
            await socket.recv()  # welcome
            # Daphne may drop the connection while the frame is still being written, so the close can surface
            # on the send as well as on the next receive.
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(sent_and_answered(socket, over_daphne), timeout=10)


def test_malformed_and_oversized_messages_get_errors_and_leave_memory_flat(live_platform: LivePlatform) -> None:
    session = ended_session()
    cookie = cookie_for(session.owner)
    # A warm-up round first: Django's caches, the database pool and the allocator settle into their sizes.
    asyncio.run(bad_messages_round(live_platform, session, cookie, attempts=20, highest_seq=1000))
    before = resident_bytes(live_platform.process.pid)
    asyncio.run(bad_messages_round(live_platform, session, cookie, attempts=ATTEMPTS, highest_seq=2000))
    growth = resident_bytes(live_platform.process.pid) - before
    assert growth < RSS_GROWTH_ALLOWED_BYTES, f"daphne grew {growth / 1048576:.1f} MiB over {ATTEMPTS} attempts"
    logged = SessionEvent.objects.filter(session=session, client_sequence__gt=1000).count()
    assert logged == ATTEMPTS // 2  # each input sent out of order logged once, its resend not again
    assert live_platform.process.poll() is None
