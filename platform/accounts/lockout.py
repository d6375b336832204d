"""One lock-out for failed sign-ins to an account, whichever way in they came: the log-in pages, the token API
or the admin. The authentication backend (accounts.backends) counts every password check, so a way in added
later shares it too; each way in also asks `sign_in_locked` first, to say so in its own words.

Failures count in the cache (shared between processes when REDIS_URL is set) in a window that opens at an
account's first failure: after FAILURES_ALLOWED in it, every attempt is refused until it closes, even with the
right password. The count goes up before the password is checked and back down when it was right, so a burst
of concurrent guesses cannot all slip past a check made before any of them failed.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from allauth.account.utils import filter_users_by_email
from django.core.cache import cache

from accounts.models import User

FAILURES_ALLOWED = 5
WINDOW_SECONDS = 5 * 60
KEY_PREFIX = "sign-in-failures"


class SignInLocked(Exception):
    """Too many failed sign-ins to this account lately; `retry_after` seconds until the window closes."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"too many failed sign-ins to this account: try again in {retry_after} seconds")
        self.retry_after = retry_after


@dataclass(frozen=True)
class SignInAttempt:
    """An attempt counted against its accounts before its password is checked."""

    keys: tuple[str, ...]


def sign_in_accounts(*, login: str) -> tuple[str, ...]:
    """The counters a login counts against: the usernames of the accounts it names (by username or e-mail,
    in any case), so that guessing by e-mail and by username shares one budget; a login that names no account
    counts under itself, so that an unknown name locks just as a known one does and tells nothing."""
    normalised = login.strip().casefold()
    if not normalised:
        return ()
    named = [user.username for user in filter_users_by_email(normalised)]
    named += User.objects.filter(username__iexact=normalised).values_list("username", flat=True)
    usernames = {username.casefold() for username in named}
    return tuple(_counter_key(name) for name in sorted(usernames or {normalised}))


def _counter_key(name: str) -> str:
    # A login is whatever a visitor typed: hashed, a key has one length and one alphabet in every cache backend.
    return f"{KEY_PREFIX}:{hashlib.sha256(name.encode()).hexdigest()}"


def _retry_after(keys: tuple[str, ...]) -> int:
    closes = [cache.get(f"{key}:closes") or time.time() + WINDOW_SECONDS for key in keys]
    return max(1, int(max(closes) - time.time()) + 1)


def sign_in_locked(*, login: str) -> SignInLocked | None:
    """The lock on the accounts a login names, or None while it may try; counts nothing."""
    keys = sign_in_accounts(login=login)
    if any((cache.get(key) or 0) >= FAILURES_ALLOWED for key in keys):
        return SignInLocked(_retry_after(keys))
    return None


def sign_in_attempt_begin(*, login: str) -> SignInAttempt:
    """Count an attempt against the login's accounts before its password is checked; raises SignInLocked
    (counting nothing) when one of them has used up its failures in the window."""
    keys = sign_in_accounts(login=login)
    counted: list[str] = []
    for key in keys:
        count = _count_one_more(key)
        counted.append(key)
        if count > FAILURES_ALLOWED:
            _give_back(tuple(counted))
            raise SignInLocked(_retry_after(keys))
    return SignInAttempt(keys)


def _count_one_more(key: str) -> int:
    # add() opens a window only where none is open; incr() is atomic (in Redis too) and keeps the expiry.
    if cache.add(key, 0, WINDOW_SECONDS):
        cache.set(f"{key}:closes", time.time() + WINDOW_SECONDS, WINDOW_SECONDS)
    try:
        return cache.incr(key)
    except ValueError:  # the window closed between add() and incr(): this attempt opens the next one
        cache.add(key, 1, WINDOW_SECONDS)
        cache.set(f"{key}:closes", time.time() + WINDOW_SECONDS, WINDOW_SECONDS)
        return 1


def _give_back(keys: tuple[str, ...]) -> None:
    for key in keys:
        try:
            cache.decr(key)
        except ValueError:  # the window closed meanwhile: nothing left to give back
            pass


def sign_in_failure_record(*, login: str) -> None:
    """Count a failure the password check did not see (a wrong authenticator code after the right password)."""
    try:
        sign_in_attempt_begin(login=login)
    except SignInLocked:
        pass  # already locked: nothing more to count


def sign_in_attempt_succeeded(*, attempt: SignInAttempt) -> None:
    """The password was right: the attempt was no failure, so it is given back."""
    _give_back(attempt.keys)
