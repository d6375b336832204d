"""Where a page may send a person back to after a form: only somewhere on this site."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import resolve_url
from django.utils.http import url_has_allowed_host_and_scheme


def next_url_or(request: HttpRequest, fallback: str, *, field: str = "next") -> str:
    """The posted `next` when it is a URL on this site (relative, or this host, and HTTPS where the request
    was), else `fallback` (a URL or a URL name): a form must not send someone on to a page an attacker chose."""
    wanted = request.POST.get(field, "")
    if url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return wanted
    return resolve_url(fallback)
