"""What a reply's sentence must pass before a player sees it, and the creator's own lines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference.narrative.reply_checks import (
    DISCOURSE_MARKERS,
    ReplyContext,
    creator_lines,
    example_turns,
    foreign_script,
    identity_stems_of,
    sentence_problems,
    world_words_of,
)

LIGHTHOUSE = ReplyContext(
    world_words=world_words_of(["The island is small and quiet. Eve keeps the lamp."]),
    last_reply="The lamp went out the night of the storm.",
    player_name="Ana",
)


def test_a_keepers_line_passes() -> None:
    assert sentence_problems("Fog's thick tonight; mind the rocks by the jetty.", LIGHTHOUSE) == []


def test_gibberish_of_other_scripts_web_talk_and_an_assistants_voice_are_refused() -> None:
    assert sentence_problems("שלום, אני אווה.", LIGHTHOUSE) == ["another script"]
    assert sentence_problems("I wrote about it on my blog.", LIGHTHOUSE) == ["off-world words: blog"]
    assert sentence_problems("You're right, the sea is calm.", LIGHTHOUSE) == ["an assistant's voice"]
    assert "not a line of speech" in sentence_problems("Ana: I will go now.", LIGHTHOUSE)
    assert sentence_problems("The lamp went out the night of the storm.", LIGHTHOUSE) == ["repeats the last reply"]


def test_a_world_that_speaks_of_computers_lets_its_characters_say_so() -> None:
    station = ReplyContext(world_words=world_words_of(["The station's computer hums."]))
    assert sentence_problems("The computer is down again.", station) == []


def test_accented_latin_is_latin() -> None:
    assert not foreign_script("Café Noël, señora, naïve Ångström")
    assert foreign_script("Привет")


@given(st.text(max_size=200))
def test_checks_never_raise_on_any_text(text: str) -> None:
    assert isinstance(sentence_problems(text, LIGHTHOUSE), list)


def test_the_example_dialogue_becomes_turns_in_the_names_of_this_character_and_player() -> None:
    dialogue = "<START>\n{{user}}: Why is the lamp dark?\n{{char}}: Because {{user}} asked too late.\nStill dark.\n"
    assert example_turns(dialogue, name="Eve", player_name="Ana") == [
        ("player", "Why is the lamp dark?"),
        ("character", "Because Ana asked too late. Still dark."),
    ]
    assert creator_lines(
        name="Eve", greeting="You came in with the fog.", example_dialogue=dialogue, player_name="Ana"
    ) == [
        "You came in with the fog.",
        "Because Ana asked too late. Still dark.",
    ]


def test_a_sentence_that_stops_before_its_point_is_refused_and_one_that_ends_on_a_verb_is_not() -> None:
    assert sentence_problems("Your name is Marten and I'm.", LIGHTHOUSE) == ["breaks off mid-phrase"]
    assert sentence_problems("They never found out what it was.", LIGHTHOUSE) == []
    assert sentence_problems("Come in.", LIGHTHOUSE) == []


def test_a_short_sentence_said_again_is_a_repeat() -> None:
    context = ReplyContext(world_words=frozenset(), last_reply="A nice story.")
    assert sentence_problems("A story.", context) == ["repeats the last reply"]
    assert sentence_problems("A lamp.", context) == []


def test_an_assistants_praise_of_the_question_is_refused() -> None:
    for said in ("What a great question, what would you say?", "That's an interesting one.", "I'm glad you asked."):
        assert sentence_problems(said, LIGHTHOUSE) == ["an assistant's voice"]


def test_the_players_question_said_back_is_refused() -> None:
    context = ReplyContext(world_words=frozenset(), player_line="Do you have to climb them every single night?")
    assert sentence_problems("Do you have to climb every step?", context) == ["echoes the player's words"]
    assert sentence_problems("Every night, all 112 of them.", context) == []


def test_a_name_nothing_the_model_was_given_uses_is_refused_where_names_are_checked() -> None:
    known = frozenset({"eve", "the", "lighthouse", "aldo", "on", "pier"})
    checked = ReplyContext(world_words=frozenset(), known_words=known)
    assert any(
        "never mentions: Tokyo, Japan" in problem for problem in sentence_problems("I was in Tokyo, Japan.", checked)
    )
    assert sentence_problems("Aldo waits on the pier, Sir, every Sunday.", checked) == []
    assert sentence_problems("I was in Tokyo.", ReplyContext(world_words=frozenset())) == []


NAMES = st.from_regex(r"[A-Z][a-z]{2,8}", fullmatch=True).filter(lambda name: name.lower() not in DISCOURSE_MARKERS)


@given(called=NAMES)
def test_a_sentence_that_opens_by_calling_someone_a_name_nobody_said_is_refused(called: str) -> None:
    known = frozenset({"rosalind", "eve", "glad", "you're", "here"})
    checked = ReplyContext(world_words=frozenset(), known_words=known)
    problems = sentence_problems(f"{called}, I'm glad you're here.", checked)
    assert (called.lower() in known) != any(f"never mentions: {called}" in problem for problem in problems)
    assert sentence_problems("Rosalind, I'm glad you're here.", checked) == []
    for opening in ("Well", "Honestly", "Aye", "Evening", "Stranger"):
        assert sentence_problems(f"{opening}, I'm glad you're here.", checked) == [], opening


def test_a_line_that_calls_the_speaker_by_their_own_name_is_refused() -> None:
    context = ReplyContext(world_words=frozenset(), character_name="Eve")
    assert "speaks to the character itself" in sentence_problems("Eve, a pleasure to meet you.", context)
    assert "speaks to the character itself" in sentence_problems("Dear Eve, Wednesday is here.", context)
    assert sentence_problems("Evening falls, and I am Eve, the keeper.", context) == []
    assert "speaks of the character as someone else" in sentence_problems("Eve said she's an extra.", context)
    assert "speaks of the character as someone else" in sentence_problems("Eve thinks nothing of it.", context)
    assert sentence_problems("Evenings are long up here.", context) == []


@given(
    character=NAMES,
    player=NAMES,
    mixed=st.sampled_from(
        [
            "I'm {player}, I repair clocks.",
            "My name is {player}.",
            "You're {character}.",
            "Your name is {character}, then.",
        ]
    ),
)
def test_a_character_who_takes_the_players_name_or_gives_its_own_away_is_refused(
    character: str, player: str, mixed: str
) -> None:
    context = ReplyContext(world_words=frozenset(), character_name=character, player_name=player)
    problems = sentence_problems(mixed.format(character=character, player=player), context)
    assert (character.lower() != player.lower()) <= ("mixes up who is who" in problems)
    for right in ("I'm {character}, I keep the lamp.", "Your name is {player}.", "You're {player}, the clockmaker."):
        sentence = right.format(character=character, player=player)
        assert character.lower() == player.lower() or "mixes up who is who" not in sentence_problems(sentence, context)


KEEPER = identity_stems_of(["Eve", "Eve is the lighthouse keeper, in her sixties. She listens more than she talks."])


@given(
    thing=st.sampled_from(["sea", "kettle", "name", "sound of the wind", "washing machine", "light of your day"]),
    claim=st.sampled_from(["I am the {}.", "I'm a {}, you know.", "I was a {} once.", "Tonight I'll be the {}."]),
)
def test_a_character_that_says_it_is_something_its_creator_never_wrote_is_refused(thing: str, claim: str) -> None:
    context = ReplyContext(world_words=frozenset(), identity=KEEPER)
    problems = sentence_problems(claim.format(thing), context)
    assert any(problem.startswith("claims to be what the character is not") for problem in problems)


def test_what_the_creator_wrote_and_plain_words_about_oneself_pass() -> None:
    context = ReplyContext(world_words=frozenset(), identity=KEEPER)
    for line in (
        "I am the lighthouse keeper, and have been for years.",
        "I'm a good listener.",
        "I'm the one who keeps watch.",
        "I'm a little tired tonight.",
        "I'm afraid of the sea.",
    ):
        assert sentence_problems(line, context) == [], line


def test_a_sentence_said_in_any_reply_the_character_still_remembers_is_not_said_again() -> None:
    context = ReplyContext(
        world_words=frozenset(),
        last_reply="The fog sits low tonight.",
        earlier_replies=["I keep the lamp lit, in my sixties, precise and patient.", "Sit down."],
    )
    assert sentence_problems("I keep the lamp lit, in my sixties, precise and patient.", context) == [
        "repeats an earlier reply"
    ]
    assert sentence_problems("The gulls are loud this morning.", context) == []


@pytest.mark.parametrize(
    ("sentence", "unfounded"),
    [
        ("The inn you came from is a small cottage in the countryside.", True),
        ("You stayed at the Crown and Anchor, down by the quay.", True),
        ("You came over from Penzance.", False),  # every word of it the player told
        ("You never told me the name of your inn.", False),
        ("I can't recall you saying where you stayed.", False),
        ("The lamp has burned for ninety years.", False),  # not about the player
    ],
)
def test_a_statement_about_the_player_is_refused_when_they_never_told_it(sentence: str, unfounded: bool) -> None:
    told = identity_stems_of(["My name is Tobiah, and I'm a clockmaker from Penzance.", "Where did I stay last night?"])
    context = ReplyContext(world_words=frozenset(), player_told=told)
    problems = sentence_problems(sentence, context)
    refused = any(problem.startswith("tells the player what nothing they told holds") for problem in problems)
    assert refused is unfounded
    assert not sentence_problems(sentence, ReplyContext(world_words=frozenset()))  # unchecked on other turns


@pytest.mark.parametrize(
    ("sentence", "refused"),
    [
        ("You're Fennimore.", True),
        ("Your dog is called Biscuit.", False),
        ("You never told me about your dog.", False),
        ("The dog on the jetty is the harbourmaster's.", False),
    ],
)
def test_asked_about_a_thing_of_theirs_a_statement_about_the_player_must_name_it(sentence: str, refused: bool) -> None:
    context = ReplyContext(
        world_words=frozenset(),
        player_told=identity_stems_of(["I'm Fennimore.", "Your dog is called Biscuit."]),
        player_things_asked=frozenset({"dog"}),
    )
    problems = sentence_problems(sentence, context)
    assert any(problem.startswith("tells the player of something other than") for problem in problems) is refused
