"""The play pages: start, resume and join; who may see a session; a Live world's gallery page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.tests.factories import UserFactory
from gallery.services import listing_refresh
from play.models import PlaySession, SessionEvent
from play.selectors import LOG_LINES_SHOWN
from play.services import session_narration_record
from play.tests.factories import PlaySessionFactory, WorldVersionFactory
from tests.fixtures import SignIn
from worlds.documents import world_document
from worlds.tests.factories import BeatFactory, StoryFactory, WorldFactory

pytestmark = pytest.mark.django_db


def test_starting_a_session_pins_the_approved_version_and_opens_the_player(signed_in: SignIn) -> None:
    version = WorldVersionFactory()
    player = UserFactory()
    response = signed_in(player).post(reverse("play:play", args=[version.world.slug]))
    session = PlaySession.objects.get(owner=player)
    assert response.status_code == 302
    assert response["Location"] == reverse("play:session", args=[session.pk])
    assert session.version == version


def test_a_world_without_an_approved_version_cannot_be_played_by_others(signed_in: SignIn) -> None:
    version = WorldVersionFactory(status="pending")
    assert signed_in(UserFactory()).get(reverse("play:play", args=[version.world.slug])).status_code == 404
    assert signed_in(version.world.owner).get(reverse("play:play", args=[version.world.slug])).status_code == 200


def test_the_player_page_is_only_for_the_sessions_players(signed_in: SignIn) -> None:
    session = PlaySessionFactory()
    assert signed_in(session.owner).get(reverse("play:session", args=[session.pk])).status_code == 200
    assert signed_in(UserFactory()).get(reverse("play:session", args=[session.pk])).status_code == 404


def test_joining_a_live_world_shares_one_session_and_its_page_lists_who_is_in_it(signed_in: SignIn) -> None:
    world = WorldFactory(category="live")
    version = WorldVersionFactory(world=world)
    first, second = UserFactory(), UserFactory()
    for person in (first, second):
        signed_in(person).post(reverse("play:play", args=[world.slug]))
    session = PlaySession.objects.get(version=version)
    assert list(session.participants.all()) == [second]
    PlaySession.objects.filter(pk=session.pk).update(status="running")
    listing_refresh(world=world)
    page = signed_in(UserFactory()).get(reverse("gallery:world", args=[world.slug])).content.decode()
    assert "In this world now" in page
    assert first.username in page
    assert second.username in page
    assert reverse("play:session", args=[session.pk]) in page


def test_a_takedown_ends_the_worlds_sessions_with_the_moderators_reason() -> None:
    from accounts.tests.factories import ModeratorFactory
    from moderation.services import world_take_down

    session = PlaySessionFactory(status="running")
    finished = PlaySessionFactory(version=session.version, status="ended", ended_reason="left")
    world_take_down(world=session.version.world, moderator=ModeratorFactory(), reason="copies another work")
    session.refresh_from_db()
    finished.refresh_from_db()
    assert (session.status, session.ended_reason) == ("ended", "copies another work")
    assert finished.ended_reason == "left"


def test_the_player_page_of_a_world_with_a_story_waits_for_its_first_choices(signed_in: SignIn) -> None:
    session = PlaySessionFactory()
    page = signed_in(session.owner).get(reverse("play:session", args=[session.pk])).content.decode()
    assert 'data-story="false"' in page
    story = StoryFactory(world=session.version.world)
    BeatFactory(story=story, name=story.start_beat)
    session.version.document = world_document(session.version.world)
    session.version.save(update_fields=["document"])
    page = signed_in(session.owner).get(reverse("play:session", args=[session.pk])).content.decode()
    assert 'data-story="true"' in page


def test_a_reloaded_player_page_shows_the_conversation_so_far(signed_in: SignIn) -> None:
    session = PlaySessionFactory()
    said = SessionEvent.objects.create(
        session=session, sequence=1, player=session.owner, kind="speech",
        payload={"type": "speech", "character": "Eve", "text": "I am <b>Tomasz</b>, a sailor."},
        applied_effects={"events": [], "reply": "Welcome, Tomasz."},
    )  # fmt: skip
    page = signed_in(session.owner).get(reverse("play:session", args=[session.pk])).content.decode()
    assert "<li>You: I am &lt;b&gt;Tomasz&lt;/b&gt;, a sailor.</li><li>Eve: Welcome, Tomasz.</li>" in page
    other = UserFactory()
    session.participants.add(other)
    PlaySession.objects.filter(pk=session.pk).update(is_live=True)
    seen_by_other = signed_in(other).get(reverse("play:session", args=[session.pk])).content.decode()
    assert f"<li>{said.player.username}: I am &lt;b&gt;Tomasz&lt;/b&gt;, a sailor.</li>" in seen_by_other


@pytest.mark.parametrize(("engine", "size"), [("raycaster-video", (640, 352)), ("raycaster", (256, 256))])
def test_the_player_picture_has_its_engines_frame_size_before_the_first_frame(
    signed_in: SignIn, engine: str, size: tuple[int, int]
) -> None:
    session = PlaySessionFactory(engine=engine)
    page = signed_in(session.owner).get(reverse("play:session", args=[session.pk])).content.decode()
    assert f'<canvas width="{size[0]}" height="{size[1]}"' in page


def test_a_reloaded_player_page_shows_the_story_so_far_in_order_escaped_and_bounded(signed_in: SignIn) -> None:
    session = PlaySessionFactory()
    for number in range(LOG_LINES_SHOWN):
        session_narration_record(session_id=session.pk, text=f"Long ago {number}.")
    session_narration_record(session_id=session.pk, text="Night falls.")
    SessionEvent.objects.create(
        session=session, sequence=1, player=session.owner, kind="speech",
        payload={"type": "speech", "character": "Eve", "text": "Is it late?"},
        applied_effects={"events": [], "reply": "It is night."},
    )  # fmt: skip
    session_narration_record(session_id=session.pk, text='You choose: <script>alert("x")</script>')
    page = signed_in(session.owner).get(reverse("play:session", args=[session.pk])).content.decode()
    assert (
        "<li>Night falls.</li><li>You: Is it late?</li><li>Eve: It is night.</li>"
        "<li>You choose: &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</li></ol>"
    ) in page
    assert '<script>alert("x")' not in page
    assert page.count("<li>Long ago") == LOG_LINES_SHOWN - 4  # the latest lines, the oldest gone
    assert "<li>Long ago 3.</li>" not in page and "<li>Long ago 4.</li>" in page
    assert session.narration.count() == LOG_LINES_SHOWN  # no more kept than a page shows
