"""Moderation pages: the queue and its items and actions for moderators; submissions and appeals for creators."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from accounts.models import User
from accounts.roles import MODERATE
from common.redirects import next_url_or
from gallery.selectors import listing_for_page
from moderation import selectors, services
from moderation.forms import AppealForm, OptionalReasonForm, QueueFilterForm, ReasonForm, ReportForm
from moderation.models import Appeal, AuditEntry, CheckResult, QueueItem, Report
from worlds.models import World, WorldVersion

SECOND_FACTOR_NEEDED = "Moderating needs a second factor: set up an authenticator app to continue."


def moderator_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Moderators only; where policy asks for it, only once they have set up a second factor."""

    @wraps(view)
    def checked(request: HttpRequest, *arguments: Any, **keywords: Any) -> HttpResponse:
        if not request.user.has_perm(MODERATE):
            raise PermissionDenied
        if selectors.second_factor_missing(moderator=request.user):
            messages.warning(request, SECOND_FACTOR_NEEDED)
            return redirect("mfa_activate_totp")
        return view(request, *arguments, **keywords)

    return checked


@login_required
@moderator_only
def queue(request: HttpRequest) -> HttpResponse:
    filters = QueueFilterForm(request.GET)
    chosen = filters.cleaned_data if filters.is_valid() else {}
    items = selectors.queue_open(**{name: value for name, value in chosen.items() if value})
    return render(request, "moderation/queue.html", {"items": items, "filters": filters})


@login_required
@moderator_only
def item(request: HttpRequest, item_id: int) -> HttpResponse:
    get_object_or_404(QueueItem, pk=item_id)
    detail = selectors.queue_item_detail(item_id=item_id)
    return render(
        request,
        "moderation/item.html",
        {"detail": detail, "item": detail.item, "reason_form": ReasonForm(), "optional_form": OptionalReasonForm()},
    )


def acted(request: HttpRequest, action: Callable[..., Any], done: str, **arguments: Any) -> HttpResponse:
    """Run a moderation service with the posted reason; say what happened or why not, and go back."""
    form = OptionalReasonForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        action(moderator=request.user, reason=reason, **arguments)
    except ValidationError as error:
        for message in error.messages:
            messages.error(request, f"Not done: {message}")
    except PermissionDenied as error:
        messages.error(request, f"Not done: {error}")
    else:
        messages.success(request, done)
    return redirect(next_url_or(request, "moderation:queue"))


@login_required
@moderator_only
@require_POST
def version_decide(request: HttpRequest, version_id: int, decision: str) -> HttpResponse:
    version = get_object_or_404(WorldVersion, pk=version_id)
    if decision == "approve":
        return acted(request, services.version_approve, f"Approved {version}.", version=version)
    return acted(request, services.version_reject, f"Rejected {version}; the creator sees why.", version=version)


WORLD_ACTIONS = {
    "take-down": (services.world_take_down, "Taken down: {world} is out of the gallery, search and the API."),
    "restore": (services.world_restore, "Restored {world}."),
}


@login_required
@moderator_only
@require_POST
def world_act(request: HttpRequest, world_id: int, action: str) -> HttpResponse:
    world = get_object_or_404(World, pk=world_id)
    if action in ("feature", "unfeature"):
        featured = action == "feature"
        done = f"{'Featured' if featured else 'No longer featured'}: {world}."
        return acted(request, partial(services.world_feature, featured=featured), done, world=world)
    service, done = WORLD_ACTIONS[action]
    return acted(request, service, done.format(world=world), world=world)


USER_ACTIONS = {
    "warn": (services.user_warn, "Warned {user}."),
    "suspend": (services.user_suspend, "Suspended {user}: they can no longer sign in."),
    "reinstate": (services.user_reinstate, "Lifted the suspension of {user}."),
}


@login_required
@moderator_only
@require_POST
def user_act(request: HttpRequest, user_id: int, action: str) -> HttpResponse:
    person = get_object_or_404(User, pk=user_id)
    service, done = USER_ACTIONS[action]
    return acted(request, service, done.format(user=person), user=person)


@login_required
@moderator_only
@require_POST
def report_dismiss(request: HttpRequest, report_id: int) -> HttpResponse:
    report = get_object_or_404(Report, pk=report_id)
    return acted(request, services.report_dismiss, "Dismissed the report.", report=report)


@login_required
@moderator_only
@require_POST
def appeal_decide(request: HttpRequest, appeal_id: int, decision: str) -> HttpResponse:
    appeal = get_object_or_404(Appeal, pk=appeal_id)
    grant = decision == "grant"
    return acted(
        request, services.appeal_decide, f"Appeal {'granted' if grant else 'denied'}.", appeal=appeal, grant=grant
    )


@login_required
@moderator_only
def audit_log(request: HttpRequest) -> HttpResponse:
    return render(request, "moderation/audit.html", {"entries": selectors.audit_log()})


@login_required
@moderator_only
def blocked_outputs(request: HttpRequest) -> HttpResponse:
    """Generated text the safety filter held back from players, newest first."""
    return render(request, "moderation/blocked_outputs.html", {"outputs": selectors.blocked_outputs_newest()})


@login_required
def submissions(request: HttpRequest) -> HttpResponse:
    """A creator's own submissions with the moderators' reasons, warnings, and appeals they can still make."""
    decisions = selectors.decisions_about(creator=request.user)
    return render(
        request,
        "moderation/submissions.html",
        {
            "versions": selectors.submissions_of(creator=request.user)[:100],
            "decisions": [(entry, selectors.appealable(entry=entry)) for entry in decisions],
            "appeal_form": AppealForm(),
        },
    )


@login_required
@require_POST
def appeal_file(request: HttpRequest, decision_id: int) -> HttpResponse:
    decision = get_object_or_404(AuditEntry, pk=decision_id)
    form = AppealForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Not sent: say why the decision should change.")
        return redirect("moderation:submissions")
    try:
        services.appeal_file(decision=decision, creator=request.user, **form.cleaned_data)
    except (ValidationError, PermissionDenied) as error:
        messages.error(request, f"Not sent: {'; '.join(getattr(error, 'messages', [str(error)]))}")
    else:
        messages.success(request, "Your appeal is with the moderators.")
    return redirect("moderation:submissions")


@login_required
@moderator_only
def check_image(request: HttpRequest, check_id: int) -> FileResponse:
    """A preview frame: pending versions are private, so their frames are served to moderators only."""
    check = get_object_or_404(CheckResult.objects.exclude(image=""), pk=check_id)
    return FileResponse(check.image.open(), content_type="image/jpeg")


@login_required
def world_report(request: HttpRequest, slug: str) -> HttpResponse:
    listing = listing_for_page(user=request.user, slug=slug)
    form = ReportForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        services.report_file(reporter=request.user, world=listing.world, **form.cleaned_data)
        messages.success(request, "Thank you: your report is with the moderators.")
        return redirect("gallery:world", slug)
    return render(request, "moderation/report.html", {"listing": listing, "form": form})
