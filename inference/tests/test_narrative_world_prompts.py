"""Typed prompts to world events: nearest labelled example, the keyword fallback, clauses, questions and negations,
and MiniLM (slow)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.language.embedding import HashedWordsEmbedder
from inference.narrative.world_prompts import OBJECT_DESCRIPTIONS, WorldPromptClassifier, WorldPromptConfig
from inference.play.prompts import asks_for_words, events_from_prompt
from inference.world.events import OBJECT_KINDS, parse_event


def test_every_object_kind_has_a_description() -> None:
    assert set(OBJECT_DESCRIPTIONS) == set(OBJECT_KINDS)


def test_a_phrasing_near_an_example_takes_its_kind() -> None:
    classifier = WorldPromptClassifier(HashedWordsEmbedder(), WorldPromptConfig(threshold=0.5))
    assert classifier.events("make it snow now") == [{"kind": "snow"}]
    assert classifier.events("hello, who are you?") == []


def test_each_clause_becomes_its_own_event() -> None:
    classifier = WorldPromptClassifier(HashedWordsEmbedder(), WorldPromptConfig(threshold=0.5))
    assert classifier.events("make it night and make it snow") == [{"kind": "night"}, {"kind": "snow"}]


def test_a_clause_no_example_is_near_goes_to_the_keyword_list() -> None:
    classifier = WorldPromptClassifier(HashedWordsEmbedder(), WorldPromptConfig(threshold=0.99))
    assert classifier.events("blizzard!") == [{"kind": "snow"}]
    assert classifier.events("quietly whistle a tune") == []


def test_a_spawn_keeps_the_named_object_and_colour_and_parses_as_a_world_event() -> None:
    classifier = WorldPromptClassifier(HashedWordsEmbedder(), WorldPromptConfig(threshold=0.5))
    events = classifier.events("a red tower appears ahead")
    assert events == [{"kind": "spawn", "object": "tower", "color": [200, 40, 40]}]
    assert parse_event(events[0]).object == "tower"


def test_a_question_or_a_request_to_be_told_is_no_world_change() -> None:
    classifier = WorldPromptClassifier(HashedWordsEmbedder(), WorldPromptConfig(threshold=0.5))
    assert classifier.events("make it snow") == [{"kind": "snow"}]
    assert classifier.events("will it snow tonight?") == []
    assert classifier.events("is it going to snow") == []
    assert classifier.events("could it get any darker?") == []
    assert classifier.events("tell me about the snow") == []
    assert classifier.events("describe the red tower") == []


def test_a_negation_becomes_the_event_that_undoes_what_it_names_or_none() -> None:
    classifier = WorldPromptClassifier(HashedWordsEmbedder(), WorldPromptConfig(threshold=0.5))
    assert classifier.events("no more snow please") == [{"kind": "clear", "object": "snow"}]
    assert classifier.events("fog rolls in no more") == [{"kind": "clear", "object": "fog"}]
    assert classifier.events("no more night") == [{"kind": "day"}]
    assert classifier.events("make it night and stop the rain") == [
        {"kind": "night"},
        {"kind": "clear", "object": "rain"},
    ]
    assert classifier.events("make the tower disappear") == []  # nothing removes a spawned object


CLASSIFIER = WorldPromptClassifier(HashedWordsEmbedder())


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=60))
def test_any_text_ending_in_a_question_mark_yields_no_events(text: str) -> None:
    assert CLASSIFIER.events(text + "?") == []


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=80))
def test_every_event_found_in_any_text_parses(text: str) -> None:
    for event in CLASSIFIER.events(text):
        parse_event(event)


@pytest.mark.slow
def test_minilm_maps_unseen_wordings_onto_events() -> None:
    from inference.language.embedding import default_embedder

    classifier = WorldPromptClassifier(default_embedder())
    assert classifier.events("darken the sky") == [{"kind": "night"}]
    assert classifier.events("everything disappears in mist") == [{"kind": "fog"}]
    assert [event["object"] for event in classifier.events("an oak tree grows in front of me")] == ["tree"]
    assert classifier.events("I ask the innkeeper for a room") == []
    assert classifier.events("make the mist go away") == [{"kind": "clear", "object": "fog"}]
    assert classifier.events("is it night yet?") == []


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [
        ("will you make it snow?", "snow"),
        ("could it be daytime?", "day"),
        ("can we have some snow?", "snow"),
        ("can it be night now", "night"),
        ("Eve, could you make it rain?", "rain"),
    ],
)
def test_a_request_put_as_a_question_asks_for_the_change(prompt: str, kind: str) -> None:
    assert not asks_for_words(prompt)
    assert events_from_prompt(prompt) == [{"kind": kind}]


@settings(max_examples=30, deadline=None)
@given(
    verb=st.sampled_from(["walk into", "look at", "climb", "light", "stand under", "touch", "run through"]),
    thing=st.sampled_from(["the rain", "the snow", "the tower", "my lantern", "the fog", "the crystal"]),
)
def test_the_player_acting_on_a_world_thing_changes_nothing(verb: str, thing: str) -> None:
    prompt = f"I {verb} {thing}"
    assert asks_for_words(prompt) and events_from_prompt(prompt) == []
    classifier = WorldPromptClassifier(HashedWordsEmbedder(), WorldPromptConfig(threshold=0.5))
    assert classifier.events(prompt) == []


@pytest.mark.parametrize(
    ("prompt", "undoing"),
    [
        ("I'm sick of this rain", {"kind": "clear", "object": "rain"}),
        ("so tired of the dark", {"kind": "day"}),
        ("can we not have night anymore", {"kind": "day"}),
    ],
)
def test_an_aversion_asks_for_what_undoes_it(prompt: str, undoing: dict[str, str]) -> None:
    assert events_from_prompt(prompt) == [undoing]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("don't make it snow", []),
        ("never let it rain here", []),
        ("don't let it be dark any more", [{"kind": "day"}]),
        ("no more fog, I can't see a thing", [{"kind": "clear", "object": "fog"}]),
        ("please stop the rain, I'm soaked", [{"kind": "clear", "object": "rain"}]),
        ("the mist should lift", [{"kind": "clear", "object": "fog"}]),
        ("the tower over there looks old", []),
        ("moonlight, please", [{"kind": "night"}]),
        ("let the sun come up", [{"kind": "dawn"}]),
        ("thunder and lightning", [{"kind": "rain"}]),
        ("plant an oak and make it dusk", [{"kind": "spawn", "object": "tree"}, {"kind": "night"}]),
        ("a wolf shows up", [{"kind": "spawn", "object": "creature"}]),
        ("turn off the snow", [{"kind": "clear", "object": "snow"}]),
        ("it's too bright", [{"kind": "night"}]),
    ],
)
def test_the_words_and_the_grammar_of_a_clause_decide_before_any_example(
    prompt: str, expected: list[dict[str, str]]
) -> None:
    assert_read_from_the_words_alone(prompt, expected)


def assert_read_from_the_words_alone(prompt: str, expected: list[dict[str, str]]) -> None:
    # A threshold no wording reaches: what is found comes from the words of the vocabulary alone.
    classifier = WorldPromptClassifier(HashedWordsEmbedder(), WorldPromptConfig(threshold=0.99))
    assert classifier.events(prompt) == expected
    assert events_from_prompt(prompt) == expected


@settings(max_examples=60, deadline=None)
@given(
    opening=st.sampled_from(["don't", "do not", "never", "please don't"]),
    verb=st.sampled_from(["make it", "let it", "bring", "summon"]),
    thing=st.sampled_from(["snow", "rain", "night", "a tower", "fog", "a dragon"]),
)
def test_a_prohibition_asks_for_nothing(opening: str, verb: str, thing: str) -> None:
    assert CLASSIFIER.events(f"{opening} {verb} {thing}") == []


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("could a deer trot in?", [{"kind": "spawn", "object": "creature"}]),
        ("can the drizzle ease off now?", [{"kind": "clear", "object": "rain"}]),
        ("will the fog lift soon?", []),
        ("make it a crisp clear morning", [{"kind": "dawn"}]),
        ("clear the mist away please", [{"kind": "clear", "object": "fog"}]),
        ("first a lantern, then an oak by the path", [
            {"kind": "spawn", "object": "lantern"}, {"kind": "spawn", "object": "tree"}
        ]),
        ("a wolf over there seems hungry", []),
        ("that snow looks lovely", []),
        ("this rain is too much", [{"kind": "clear", "object": "rain"}]),
        ("good morning, Eve", []),
        ("make it dusk, when the bats come out", [{"kind": "night"}]),
    ],
)  # fmt: skip
def test_requests_put_as_questions_lists_remarks_and_greetings_are_read_as_a_person_reads_them(
    prompt: str, expected: list[dict[str, str]]
) -> None:
    assert_read_from_the_words_alone(prompt, expected)


@settings(max_examples=60, deadline=None)
@given(
    greeting=st.sampled_from(["good night", "Good morning", "good evening", "goodnight", "good day"]),
    name=st.sampled_from(["Odo", "Eve", "keeper", "friend", "everyone"]),
)
def test_a_greeting_wishes_no_time_of_day(greeting: str, name: str) -> None:
    assert events_from_prompt(f"{greeting}, {name}") == []
    assert CLASSIFIER.events(f"{greeting}, {name}!") == []


@given(
    st.sampled_from(["undo", "reverse", "cancel", "take back", "take away", "call off"]),
    st.sampled_from(["snow", "rain", "fog"]),
    st.sampled_from(["", "please ", "could you "]),
)
def test_undoing_a_weather_clears_it_and_undoing_what_nothing_undoes_changes_nothing(
    verb: str, weather: str, politeness: str
) -> None:
    assert events_from_prompt(f"{politeness}{verb} the {weather}") == [{"kind": "clear", "object": weather}]
    assert events_from_prompt(f"{politeness}{verb} the sunrise") == []


WEATHERS = {"snow": "snow", "rain": "rain", "fog": "fog"}
TIMES = {"night": "night", "midday": "day", "sunrise": "dawn"}


@settings(max_examples=80, deadline=None)
@given(
    opening=st.sampled_from(
        ["how about we", "what if we", "is it possible to", "any chance you could", "can we", "could you", "would you"]
    ),
    word=st.sampled_from([*WEATHERS, *TIMES]),
)
def test_a_wish_put_as_a_question_or_a_suggestion_asks_for_the_change(opening: str, word: str) -> None:
    kind = (WEATHERS | TIMES)[word]
    assert events_from_prompt(f"{opening} make it {word}?") == [{"kind": kind}]
    assert CLASSIFIER.events(f"{opening} bring on the {word}?") == [{"kind": kind}]


@settings(max_examples=40, deadline=None)
@given(
    question=st.sampled_from(["can you see", "could you hear", "would you like", "will you remember", "can we find"]),
    thing=st.sampled_from(["the fog", "the rain", "the tower", "a lantern", "the stars"]),
)
def test_asking_the_listener_to_perceive_or_want_something_changes_nothing(question: str, thing: str) -> None:
    assert CLASSIFIER.events(f"{question} {thing}?") == []


@settings(max_examples=60, deadline=None)
@given(
    wish=st.sampled_from(["make sure it doesn't", "I hope it won't", "I'd rather it didn't", "ensure it doesn't"]),
    weather=st.sampled_from(["snow", "rain", "get foggy", "turn dark"]),
    after=st.sampled_from(["", " while I explore", " tonight"]),
)
def test_wishing_a_change_away_before_it_comes_asks_for_nothing(wish: str, weather: str, after: str) -> None:
    assert CLASSIFIER.events(f"{wish} {weather}{after}") == []


@settings(max_examples=40, deadline=None)
@given(
    delay=st.sampled_from(["hold off on the", "please postpone the", "let's put off the", "wait on the"]),
    thing=st.sampled_from(["nightfall", "snowstorm", "rain", "sunrise"]),
)
def test_putting_a_change_off_asks_for_nothing(delay: str, thing: str) -> None:
    assert CLASSIFIER.events(f"{delay} {thing} for a while") == []


@settings(max_examples=60, deadline=None)
@given(
    thing=st.sampled_from(["the rain", "the stars", "this mist", "the snowfall", "the sunset"]),
    verb=st.sampled_from(["is", "looks", "sounds", "seems"]),
    delight=st.sampled_from(["lovely", "so beautiful", "really peaceful", "gorgeous tonight"]),
)
def test_delight_in_the_weather_there_is_asks_for_nothing(thing: str, verb: str, delight: str) -> None:
    assert CLASSIFIER.events(f"{thing} {verb} {delight}") == []


@settings(max_examples=60, deadline=None)
@given(
    before=st.sampled_from(list(WEATHERS)),
    after=st.sampled_from([*WEATHERS, *TIMES]),
    verb=st.sampled_from(["turn", "change", "please transform"]),
)
def test_what_a_weather_is_turned_into_is_asked_for_and_not_the_weather_itself(
    before: str, after: str, verb: str
) -> None:
    assert events_from_prompt(f"{verb} this {before} into {after}") == [{"kind": (WEATHERS | TIMES)[after]}]


@settings(max_examples=40, deadline=None)
@given(
    first=st.sampled_from(list(WEATHERS)), second=st.sampled_from(list(WEATHERS)), stop=st.sampled_from(["stop", "end"])
)
def test_a_weather_joined_to_a_stopped_one_is_stopped_too(first: str, second: str, stop: str) -> None:
    expected = {"kind": "clear", "object": first} if first == second else {"kind": "clear"}
    assert events_from_prompt(f"{stop} the {first} and the {second}") == [expected]


@settings(max_examples=60, deadline=None)
@given(
    weather=st.sampled_from(["snowflakes drifting down", "rain falling", "fog curling"]),
    where=st.sampled_from(["past the lanterns", "over the old tower", "between the oaks", "by the crystal"]),
)
def test_a_thing_that_says_where_the_weather_falls_is_not_asked_for(weather: str, where: str) -> None:
    kind = {"snowflakes": "snow", "rain": "rain", "fog": "fog"}[weather.split()[0]]
    assert events_from_prompt(f"I want to see {weather} {where}") == [{"kind": kind}]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("the drizzle is far too cold, bring back the sun", [{"kind": "clear", "object": "rain"}, {"kind": "day"}]),
        ("it's too dark", [{"kind": "day"}]),
        ("enough fog for one day", [{"kind": "clear", "object": "fog"}]),
        ("a haze so thick we can't see the harbour", [{"kind": "fog"}]),
        ("let the storm rage, cats and dogs", [{"kind": "rain"}]),
        ("put a lamp at the end of the jetty", [{"kind": "spawn", "object": "lantern"}]),
        ("could a raven come?", [{"kind": "spawn", "object": "creature"}]),
        ("I'd love a fir tree beside me", [{"kind": "spawn", "object": "tree"}]),
        ("can I have a little stone watchtower", [{"kind": "spawn", "object": "tower"}]),
        ("tidy up the sky, would you?", []),
        ("wrap the pier in mist, would you?", [{"kind": "fog"}]),
        ("can it drizzle for a bit?", [{"kind": "rain"}]),
        ("will it be raining later?", []),
    ],
)  # fmt: skip
def test_complaints_idioms_and_favours_are_read_as_a_person_reads_them(
    prompt: str, expected: list[dict[str, str]]
) -> None:
    assert_read_from_the_words_alone(prompt, expected)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("this glare is blinding my eyes, make it dusk", [{"kind": "night"}]),
        ("let's watch the sun creeping up over the hills", [{"kind": "dawn"}]),
        ("is there some way you could make it foggy?", [{"kind": "fog"}]),
        ("might you bring a flurry in, what do you think?", [{"kind": "snow"}]),
        ("shall we have a downpour?", [{"kind": "rain"}]),
        ("would a spot of sunshine be possible?", [{"kind": "day"}]),
        ("trade the snow for a thunderstorm", [{"kind": "rain"}]),
        ("replace the mist with sunshine", [{"kind": "day"}]),
        ("ditch the drizzle", [{"kind": "clear", "object": "rain"}]),
        ("scrap the mist", [{"kind": "clear", "object": "fog"}]),
        ("I hope we don't get fog on the way back", []),
        ("any chance of an oak showing up by the well?", [{"kind": "spawn", "object": "tree"}]),
        ("stick a torch beside the door", [{"kind": "spawn", "object": "lantern"}]),
        ("pop a crystal next to the well", [{"kind": "spawn", "object": "crystal"}]),
        ("send a goat wandering through the square", [{"kind": "spawn", "object": "creature"}]),
        ("could a duck come waddling by?", [{"kind": "spawn", "object": "creature"}]),
        ("the wolf bit my hand", []),
        ("is that possible?", []),
    ],
)  # fmt: skip
def test_wishes_put_as_possibilities_swaps_and_things_sent_into_the_world_are_asked_for(
    prompt: str, expected: list[dict[str, str]]
) -> None:
    assert_read_from_the_words_alone(prompt, expected)
