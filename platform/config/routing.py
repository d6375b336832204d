"""The ASGI protocol router: Django for HTTP, Channels consumers for WebSockets.

Browser routes take a socket only from one of the site's own origins (a page on another site cannot ride a
player's cookie) and read the session cookie; worker routes authenticate with a bearer token. A socket to
any other path is refused at the handshake (403), never answered with a 500. Imported once Django is set up
(config.asgi does that for daphne; tests import it directly).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.auth import AuthMiddleware
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import WebsocketDenier
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware
from django.conf import settings
from django.core.asgi import get_asgi_application
from django.http.request import split_domain_port, validate_host
from django.urls import path, re_path

from play.consumers import PlayConsumer
from play.worker_consumer import WorkerConsumer
from shell.front import LivenessAnswered, RequestsBounded

DEFAULT_PORTS = {"http": 80, "https": 443}
# The page's scheme for each socket scheme: a page served over https opens wss.
PAGE_SCHEMES = {"ws": "http", "wss": "https"}


def origin_key(origin: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an origin such as `https://example.com:8443`, or None when it is not one."""
    try:
        parts = urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:  # a port out of range or not a number
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    return parts.scheme, parts.hostname, port or DEFAULT_PORTS[parts.scheme]


def header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


def site_origins(scope: dict[str, Any]) -> set[tuple[str, str, int]]:
    """The origins a page of this site can have for this socket: the scheme and Host it was opened with (when
    that host is one of ALLOWED_HOSTS), and the CSRF_TRUSTED_ORIGINS a proxy in front may serve it from."""
    origins = {key for key in map(origin_key, settings.CSRF_TRUSTED_ORIGINS) if key is not None}
    host = header(scope, b"host")
    scheme = PAGE_SCHEMES.get(scope.get("scheme", "ws"))
    if host and scheme:
        domain, _ = split_domain_port(host.lower())
        if domain and validate_host(domain, settings.ALLOWED_HOSTS):
            own = origin_key(f"{scheme}://{host}")
            if own is not None:
                origins.add(own)
    return origins


class SiteOriginValidator:
    """Lets a browser's socket through only from the site's own origin: scheme, host and port must all match
    (Channels' AllowedHostsOriginValidator compares the host alone, so `http://localhost:1` passed)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        origin = header(scope, b"origin")
        if origin is not None and origin_key(origin) in site_origins(scope):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)


class SocketSessionMiddleware(SessionMiddleware):
    """The session from the cookie, as Channels' SessionMiddleware reads it, without the wrapper that middleware
    puts around every message the application sends: it saves a changed session on an HTTP response alone, so
    on a socket, where each player is sent every frame, it only costs its checks."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def signed_in_socket(application: Any) -> Any:
    """Channels' AuthMiddlewareStack, reading the session with SocketSessionMiddleware."""
    return CookieMiddleware(SocketSessionMiddleware(AuthMiddleware(application)))


websocket_urlpatterns = [
    # Workers run on remote machines and send no Origin: their token is their identity.
    path("ws/workers/", WorkerConsumer.as_asgi()),
    path("ws/play/<uuid:session_id>/", SiteOriginValidator(signed_in_socket(PlayConsumer.as_asgi()))),
    # Anything else, an upper-case or malformed session id included: closed before accept, so a 403.
    re_path(r"", WebsocketDenier.as_asgi()),
]

application = ProtocolTypeRouter(
    {
        "http": LivenessAnswered(
            RequestsBounded(
                get_asgi_application(),
                running=settings.HTTP_REQUESTS_RUNNING,
                wait_seconds=settings.HTTP_REQUEST_WAIT_SECONDS,
            )
        ),
        "websocket": URLRouter(websocket_urlpatterns),
    }
)
