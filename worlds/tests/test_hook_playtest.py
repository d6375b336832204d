"""The studio's hook playtest: inputs classified into the saved branches as play classifies them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inference.language.embedding import HashedWordsEmbedder
from tests.fixtures import SignIn
from worlds.forms import hook_playtest
from worlds.models import Hook
from worlds.tests.factories import HookBranchFactory, HookFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def hashed_words_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's MiniLM takes seconds to load; these tests are about the page, not the embedding."""
    monkeypatch.setattr("worlds.views.default_embedder", HashedWordsEmbedder)


def guardian_hook(**hook_values: object) -> Hook:
    """A hook with a gift branch (the factory's) and a fight branch."""
    hook = HookFactory(**hook_values)
    HookBranchFactory(hook=hook)
    HookBranchFactory(hook=hook, name="fight", intent="the player attacks the guardian", examples=["I draw my sword"])
    return hook


def playtest_page(signed_in: SignIn, hook: Hook, inputs: str) -> str:
    response = signed_in(hook.world.owner).get(reverse("worlds:hook", args=[hook.pk]), {"inputs": inputs})
    return response.content.decode()


def test_the_playtest_shows_each_inputs_branch_how_it_was_decided_and_every_branchs_score(signed_in: SignIn) -> None:
    page = playtest_page(signed_in, guardian_hook(), "TAKE THIS COIN\nI sing a song")
    taken, fallen_back = page.split('class="playtest-input"')[1:]
    assert "<strong>branch gift</strong>" in taken and "(decided by similarity)" in taken
    assert "gift: 1.00" in taken and "fight: -0.27" in taken
    assert taken.count('class="playtest-match"') == 1
    assert "no branch: the fallback would narrate" in fallen_back and "(decided by threshold)" in fallen_back
    assert 'class="playtest-match"' not in fallen_back


def test_the_playtest_says_when_the_fallback_is_off(signed_in: SignIn) -> None:
    page = playtest_page(signed_in, guardian_hook(fallback_enabled=False), "I sing a song")
    assert "no branch, and the fallback is off" in page


def test_a_hook_without_branches_asks_for_one_before_it_can_be_playtested(signed_in: SignIn) -> None:
    page = playtest_page(signed_in, HookFactory(), "take this coin")
    assert "Add a branch and save the hook to playtest it." in page
    assert 'class="playtest-results"' not in page


def test_an_input_need_not_equal_an_example_to_take_its_branch() -> None:
    [result] = hook_playtest(guardian_hook(), ["here, take this coin"], embedder=HashedWordsEmbedder())
    assert (result.decision.branch, result.decision.decided_by) == ("gift", "similarity")
    assert list(result.decision.scores) == ["gift", "fight"]


@pytest.mark.slow
def test_with_minilm_a_paraphrase_takes_the_branch_it_means() -> None:
    from inference.language.embedding import default_embedder

    hook = HookFactory()
    HookBranchFactory(
        hook=hook,
        intent="the player offers the guardian a gift",
        examples=["I give you my lantern", "take this coin", "here is a present for you"],
    )
    HookBranchFactory(
        hook=hook,
        name="fight",
        intent="the player attacks the guardian",
        examples=["I draw my sword and strike", "I punch the statue"],
    )
    HookBranchFactory(
        hook=hook,
        name="talk",
        intent="the player talks to the guardian and asks a question",
        examples=["who are you?", "tell me about the bridge"],
    )
    paraphrases = ["I hand over a few silver coins", "I kick the guardian", "may I ask why you guard this bridge?"]
    results = hook_playtest(hook, paraphrases, embedder=default_embedder())
    assert [result.decision.branch for result in results] == ["gift", "fight", "talk"]
    assert all(result.decision.decided_by == "similarity" for result in results)


def test_a_playtest_of_more_inputs_than_the_limit_is_refused_naming_the_limit(
    signed_in: SignIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    classified: list[str] = []
    monkeypatch.setattr("worlds.views.hook_playtest", lambda hook, inputs, **_: classified.extend(inputs) or [])
    page = playtest_page(signed_in, guardian_hook(), "\n".join(f"take coin {number}" for number in range(300)))
    assert "300 inputs; a playtest takes at most 20" in page
    assert classified == []


def test_a_playtest_input_over_the_length_limit_is_refused_naming_the_limit(signed_in: SignIn) -> None:
    page = playtest_page(signed_in, guardian_hook(), "take this coin\n" + "coin " * 100)
    assert "each input is at most 300 characters; this one has 499" in page
    assert 'class="playtest-results"' not in page


def test_a_playtest_stops_when_its_time_budget_is_spent_and_says_so(
    signed_in: SignIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = guardian_hook()
    assert (
        hook_playtest(hook, ["take this coin", "I draw my sword"], embedder=HashedWordsEmbedder(), budget_seconds=0)
        == []
    )
    monkeypatch.setattr("worlds.views.PLAYTEST_BUDGET_SECONDS", 0.0)
    page = playtest_page(signed_in, hook, "take this coin\nI draw my sword")
    assert "stopped after 0 of 2 inputs: a playtest runs for at most 0 seconds" in page
