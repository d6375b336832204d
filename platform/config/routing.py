"""The ASGI protocol router: Django for HTTP, Channels consumers for WebSockets.

Browser routes check the Origin against ALLOWED_HOSTS (a page on another site cannot ride a player's
cookie) and read the session cookie; worker routes authenticate with a bearer token. Imported once Django is
set up (config.asgi does that for daphne; tests import it directly).
"""

from __future__ import annotations

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django.core.asgi import get_asgi_application
from django.urls import path

from stories.consumers import PlayConsumer
from workers.consumers import WorkerConsumer

websocket_urlpatterns = [
    # Workers run on remote machines and send no Origin: their token is their identity.
    path("ws/workers/", WorkerConsumer.as_asgi()),
    path("ws/play/<uuid:session_id>/", AllowedHostsOriginValidator(AuthMiddlewareStack(PlayConsumer.as_asgi()))),
]

application = ProtocolTypeRouter(
    {
        "http": get_asgi_application(),
        "websocket": URLRouter(websocket_urlpatterns),
    }
)
