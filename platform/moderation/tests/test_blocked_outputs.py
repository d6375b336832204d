"""Generated text the safety filter held back: recorded for moderators, shown to them only; the lists it used."""

from __future__ import annotations

import json
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import User
from accounts.tests.factories import UserFactory
from inference.narrative.safety import TermFilter, refused_terms
from moderation.checks import TERMS_FILE
from moderation.models import BlockedOutput
from moderation.selectors import safety_terms
from moderation.services import generated_output_blocked_record
from tests.fixtures import SignIn
from worlds.tests.factories import WorldFactory

pytestmark = pytest.mark.django_db


def test_a_blocked_output_is_recorded_and_moderators_read_the_newest_first(signed_in: SignIn, moderator: User) -> None:
    world = WorldFactory(title="Foghaven")
    session_id = uuid.uuid4()
    generated_output_blocked_record(
        session_id=session_id, world_id=world.pk, character="Eve", text="The gore spreads.", terms=["gore"]
    )
    generated_output_blocked_record(
        session_id=str(session_id), world_id=world.pk, character="", text="Blood on the quay.", terms=["blood"]
    )

    newest, oldest = BlockedOutput.objects.all()
    assert (newest.character_name, newest.terms, newest.session_id) == ("", ["blood"], session_id)
    assert (oldest.character_name, oldest.text) == ("Eve", "The gore spreads.")
    page = signed_in(moderator).get(reverse("moderation:blocked_outputs")).content.decode()
    assert page.index("Blood on the quay.") < page.index("The gore spreads.")
    assert "the narrator" in page and "Foghaven" in page and str(session_id) in page


def test_a_speaker_name_longer_than_a_character_name_is_cut_to_fit() -> None:
    world = WorldFactory()
    record = generated_output_blocked_record(
        session_id=uuid.uuid4(), world_id=world.pk, character="E" * 300, text="gore", terms=["gore"]
    )
    record.refresh_from_db()
    assert record.character_name == "E" * 100


def test_only_moderators_read_blocked_output(signed_in: SignIn) -> None:
    url = reverse("moderation:blocked_outputs")
    assert signed_in(UserFactory()).get(url).status_code == 403
    assert Client().get(url).status_code == 302


def test_the_queue_links_to_blocked_output(signed_in: SignIn, moderator: User) -> None:
    page = signed_in(moderator).get(reverse("moderation:queue")).content.decode()
    assert f'href="{reverse("moderation:blocked_outputs")}"' in page


def test_the_worker_gets_the_data_files_lists_in_a_form_that_survives_json() -> None:
    lists = json.loads(TERMS_FILE.read_text())
    sent = json.loads(json.dumps(safety_terms()))
    assert sent == {severity: lists[severity] for severity in ("blocked", "mature", "teen")}
    assert refused_terms("kys, and some blood", rating="teen", terms=TermFilter.from_dict(sent)) == ["kys"]


def test_changing_the_returned_lists_does_not_change_the_next_callers() -> None:
    safety_terms()["blocked"].clear()
    assert safety_terms()["blocked"]
