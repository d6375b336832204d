"""Hook outcome counts for creators: counted in play, shown in the studio, never part of a world's content."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from accounts.tests.factories import UserFactory
from worlds.documents import world_document
from worlds.models import Hook, HookBranch
from worlds.services import hook_outcome_record, world_from_document, world_publish
from worlds.tests.factories import HookBranchFactory

pytestmark = pytest.mark.django_db


def counts(hook: Hook) -> tuple[dict[str, int], int]:
    hook.refresh_from_db()
    return dict(HookBranch.objects.filter(hook=hook).values_list("name", "times_chosen")), hook.times_fallen_back


def test_each_outcome_counts_once_for_its_branch_or_the_fallback() -> None:
    gift = HookBranchFactory()
    hook = gift.hook
    HookBranchFactory(hook=hook, name="fight")
    for branch_name in ("gift", "gift", None, "fight", "gift"):
        hook_outcome_record(world_id=hook.world_id, hook_name="guardian", branch_name=branch_name)
    assert counts(hook) == ({"gift": 3, "fight": 1}, 1)


def test_names_no_longer_in_the_draft_and_other_worlds_hooks_are_not_counted() -> None:
    hook = HookBranchFactory().hook
    elsewhere = HookBranchFactory().hook  # also called guardian, with a gift branch, in another world
    hook_outcome_record(world_id=hook.world_id, hook_name="guardian", branch_name="renamed-since")
    hook_outcome_record(world_id=hook.world_id, hook_name="deleted-since", branch_name=None)
    hook_outcome_record(world_id=hook.world_id, hook_name="deleted-since", branch_name="gift")
    assert counts(hook) == ({"gift": 0}, 0)
    hook_outcome_record(world_id=elsewhere.world_id, hook_name="guardian", branch_name="gift")
    assert counts(hook) == ({"gift": 0}, 0)
    assert counts(elsewhere) == ({"gift": 1}, 0)


def test_counts_are_not_content_so_documents_and_versions_leave_them_out() -> None:
    hook = HookBranchFactory().hook
    hook_outcome_record(world_id=hook.world_id, hook_name="guardian", branch_name="gift")
    hook_outcome_record(world_id=hook.world_id, hook_name="guardian", branch_name=None)
    before = world_document(hook.world)
    hook_outcome_record(world_id=hook.world_id, hook_name="guardian", branch_name="gift")
    document = world_document(hook.world)
    assert document == before
    assert "times_fallen_back" not in document["hooks"][0]
    assert "times_chosen" not in document["hooks"][0]["branches"][0]
    version = world_publish(world=hook.world, by=hook.world.owner)
    assert "times_chosen" not in version.document["hooks"][0]["branches"][0]


def test_a_copy_from_a_document_starts_counting_from_nothing_and_a_document_cannot_set_counts() -> None:
    hook = HookBranchFactory().hook
    hook_outcome_record(world_id=hook.world_id, hook_name="guardian", branch_name="gift")
    copy = world_from_document(world_document(hook.world), owner=UserFactory(), slug="copy")
    assert counts(copy.hooks.get()) == ({"gift": 0}, 0)
    forged = world_document(hook.world)
    forged["hooks"][0]["branches"][0]["times_chosen"] = 1000
    with pytest.raises(ValidationError, match="unknown fields times_chosen"):
        world_from_document(forged, owner=UserFactory(), slug="forged")


def test_the_hook_page_shows_each_branchs_count_and_the_fallbacks() -> None:
    hook = HookBranchFactory().hook
    HookBranchFactory(hook=hook, name="fight")
    for branch_name in ("gift", "gift", None):
        hook_outcome_record(world_id=hook.world_id, hook_name="guardian", branch_name=branch_name)
    client = Client()
    client.force_login(hook.world.owner)
    page = client.get(reverse("worlds:hook", args=[hook.pk])).content.decode()
    assert "branch gift: chosen 2 times" in page and "branch fight: chosen 0 times" in page
    assert "no branch fit, the fallback narrated: 1 time<" in page
