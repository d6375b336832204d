"""How Django under daphne runs the middleware: in one synchronous chain on the request's thread."""

from __future__ import annotations

from asgiref.sync import SyncToAsync
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.utils.module_loading import import_string


def test_the_whole_middleware_chain_runs_synchronously_on_the_request_thread() -> None:
    # Django gives a middleware that can run either way the mode of the one below it. With one that has only a
    # synchronous form innermost, every middleware above it runs synchronously and the chain is handed to the
    # request's thread once; with an asynchronous one innermost, each of them would go to that thread and back
    # for its request and response hooks.
    innermost = import_string(settings.MIDDLEWARE[-1])
    assert not getattr(innermost, "async_capable", False)
    assert isinstance(ASGIHandler()._middleware_chain, SyncToAsync)
