"""Questions about the player answered from their own recalled words: which sentence, which span, said how."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.language.embedding import default_embedder
from inference.narrative.memory import extract_memories, to_second_person
from inference.narrative.recollection import (
    RecollectionConfig,
    answer_kind,
    answer_span,
    asks_about_the_player,
    asks_own_name,
    name_told,
    recollect,
    sentences_of,
    stands_out,
    statement_of,
)

EMBEDDER = default_embedder()


def recollected(question: str, memories: list[str]) -> tuple[str, str] | None:
    found = recollect(question, EMBEDDER.embed([question])[0], memories, EMBEDDER)
    return (found.statement, found.answer) if found else None


def test_the_players_brother_beats_a_fisherman_called_aldo() -> None:
    memories = ["I met an old fisherman called Aldo on the pier.", "My brother is called Marco.", "The tea was cold."]
    assert recollected("What was my brother called again?", memories) == ("Your brother is called Marco.", "Marco")


def test_a_summary_that_repeats_its_source_is_no_rival() -> None:
    memories = [
        "I grew up in Tarsk, a village in the hills. I love the sea.",
        "I grew up in Tarsk, a village in the hills.",
        "I walked to the harbour today.",
    ]
    assert recollected("Remind me where I grew up?", memories) == ("You grew up in Tarsk.", "Tarsk")


def test_my_name_is_the_players_own_name_not_another_name_they_said() -> None:
    memories = ["I met a sailor named Bram.", "Call me Ilse."]
    assert recollected("What's my name?", memories) == ("Your name is Ilse.", "Ilse")


def test_statements_and_questions_about_someone_else_are_not_answered_from_memory() -> None:
    memories = ["My brother is called Marco."]
    assert recollected("My brother is called Marco.", memories) is None
    assert recollected("Who are you?", memories) is None
    assert not asks_about_the_player("Where is the lamp room?")


def test_a_question_no_memory_answers_gets_no_recollection() -> None:
    memories = ["I walked along the beach this morning.", "The gulls were loud."]
    assert recollected("What was my sister called?", memories) is None


@pytest.mark.parametrize(
    ("sentence", "kind", "answer"),
    [
        ("My dog is named Pepper.", "name", "Pepper"),
        ("I was born in the mountain village of Karsk.", "place", "the mountain village of Karsk"),
        ("I owe forty gold coins to Brann.", "number", "forty gold"),
        ("I found a silver key at the docks.", "thing", "a silver key"),
    ],
)
def test_the_answer_span_is_the_kind_the_question_wants(sentence: str, kind: str, answer: str) -> None:
    assert answer_span(sentence, kind) == answer


@settings(max_examples=60, deadline=None)
@given(question=st.text(max_size=80), memories=st.lists(st.text(max_size=120), max_size=5))
def test_any_text_gives_a_recollection_that_states_its_answer_or_none(question: str, memories: list[str]) -> None:
    found = recollect(question, EMBEDDER.embed([question])[0], memories, EMBEDDER)
    if found is not None:
        assert found.sentence in sentences_of(memories)
        assert found.answer.lower() in found.statement.lower() or found.answer == found.sentence


def test_every_sentence_of_the_memories_is_kept_once() -> None:
    assert sentences_of(["I sail. My boat is red!", "my boat is red", "Hi"]) == ["I sail.", "My boat is red!"]


def test_a_fact_told_before_a_tag_question_is_remembered_and_answered() -> None:
    told = [
        memory.text for memory in extract_memories("I lost a yellow glove by the noodle stall, have you seen it?", 1)
    ]
    assert told == ["I lost a yellow glove by the noodle stall."]
    assert recollected("What was it I'd lost again?", told) == (
        "You lost a yellow glove by the noodle stall.",
        "a yellow glove",
    )


def test_her_name_is_the_name_of_whom_the_players_last_line_was_about() -> None:
    memories = ["My wife Hanne bakes bread for the whole village.", "I met a sailor named Bram."]
    question = "And her name, do you remember it?"
    found = recollect(question, EMBEDDER.embed([question])[0], memories, EMBEDDER, previous="What does my wife do?")
    assert found is not None and found.answer == "Hanne"
    assert recollected(question, memories) is None  # without that line, "her" names nobody of the player's


def test_a_name_may_come_first_or_after_the_word_called() -> None:
    assert recollected("What's my dog called?", ["Biscuit is my dog's name."]) == (
        "Biscuit is your dog's name.",
        "Biscuit",
    )
    assert recollected("What did I call my boat?", ["I sail a skiff called the Pipit."])[1] == "Pipit"


def test_where_the_player_comes_from_is_the_place_after_from() -> None:
    memories = ["My name is Ilse, I came over on the morning ferry.", "I'm a clockmaker from Varnholt."]
    assert recollected("And where was it I said I came from?", memories) == (
        "You're a clockmaker from Varnholt.",
        "Varnholt",
    )


def test_a_question_about_the_place_is_not_about_what_the_player_said_before() -> None:
    previous = "I've got a jar of fireflies in my bag."
    assert not asks_about_the_player("Is it always like this?", previous)
    assert asks_about_the_player("And what did she want?", "My niece stayed home.")


PETS = ["dog", "cat", "parrot", "goat"]
NAMES = ["Biscuit", "Pudding", "Tobias", "Odile", "Marigold"]


@settings(max_examples=12, deadline=None)
@given(pet=st.sampled_from(PETS), name=st.sampled_from(NAMES), rival=st.sampled_from(["Rufus", "Heron", "Aldo"]))
def test_a_pet_the_player_says_they_have_beats_a_line_that_names_another(pet: str, name: str, rival: str) -> None:
    memories = [f"A scruffy {pet} called {rival} sleeps outside the inn.", f"I've got a {pet}, her name is {name}."]
    for question in (f"whats my {pet}s name", f"Do you remember what my {pet} is called?"):
        found = recollected(question, memories)
        assert found is not None and found[1] == name


@settings(max_examples=12, deadline=None)
@given(
    wrapper=st.sampled_from(
        ["{q}", "I pick up a stone and ask, {q}", "Ugh, I keep forgetting, {q}", "{q} because I am so tired"]
    )
)
def test_a_question_mixed_with_an_action_or_a_ramble_is_answered_as_the_bare_question(wrapper: str) -> None:
    memories = ["My cat Pudding sleeps on my feet.", "I mended a hole in my cloak.", "The gulls stole a fish."]
    assert recollected(wrapper.format(q="what is my cat called?"), memories) == (
        "Your cat Pudding sleeps on your feet.",
        "Pudding",
    )


@pytest.mark.parametrize(
    ("told", "question"),
    [
        ("Name's Tobias, by the way.", "Do you even remember who you're talking to?"),
        ("hi there, im Tobias from the mill", "so who am i then"),
        ("Call me Tobias.", "You do know me, right?"),
    ],
)
def test_a_question_about_who_the_player_is_gets_their_name_without_my_or_i(told: str, question: str) -> None:
    memories = [memory.text for memory in extract_memories(told, 1)] + ["I met a sailor named Bram."]
    assert recollected(question, memories) == ("Your name is Tobias.", "Tobias")


@pytest.mark.parametrize(
    ("fact", "question", "answer"),
    [
        ("Thunder frightens me more than anything.", "what scares me?", "Thunder frightens you more than anything."),
        ("I lost my wedding ring on the beach.", "what did I lose?", "You lost your wedding ring on the beach."),
        ("I make my living repairing clocks.", "what do i do for work again", "You make your living repairing clocks."),
    ],
)
def test_the_players_own_sentence_closest_in_meaning_answers_without_sharing_a_word(
    fact: str, question: str, answer: str
) -> None:
    memories = ["I mended a hole in my cloak.", fact, "A cat followed me from the bridge.", "The bread was warm."]
    assert recollected(question, memories)[0] == answer


@pytest.mark.parametrize(
    "question",
    ["what did I have for breakfast?", "whats my dogs name", "Do you remember the storm last winter?"],
)
def test_what_the_player_never_told_is_not_answered_with_something_else_they_said(question: str) -> None:
    memories = [
        "I spent the evening playing cards with a sailor.",
        "A scruffy dog called Rufus sleeps outside the inn.",
        "I walked along the beach and watched the gulls.",
    ]
    assert recollected(question, memories) is None


def test_where_the_player_comes_from_is_else_the_named_place_they_live_or_work_in() -> None:
    memories = ["I mend fishing gear for a living, over in Saltcombe on the mainland.", "I mended a hole in my cloak."]
    assert recollected("And where did I say I'd come over from?", memories)[1] == "Saltcombe"
    assert recollected("Where am I from?", ["I mended a hole in my cloak.", "I walked along the beach."]) is None


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("And my aunt, what was her name? It's gone clean out of my head.", "Rosalind"),
        ("my horse. name. you remember?", "Bramble"),
        ("Who'll be waiting up for me at home, do you reckon?", "Rosalind"),
    ],
)
def test_a_question_followed_by_a_remark_or_typed_in_pieces_is_still_asked(question: str, answer: str) -> None:
    memories = [
        "My aunt Rosalind keeps house for me in Dunmere.",
        "I ride a grey mare called Bramble.",
        "I walked along the beach and watched the gulls.",
    ]
    found = recollected(question, memories)
    assert found is not None and found[1] == answer


@pytest.mark.parametrize(
    "question",
    ["What should I call you?", "where can I get a hot meal?", "How do I get up to the lamp room?"],
)
def test_asking_for_advice_or_permission_is_no_question_about_the_player(question: str) -> None:
    assert not asks_about_the_player(question)


def test_a_supposition_tells_nothing_to_remember() -> None:
    assert extract_memories("If I went missing out here, where would you send word?", turn=1) == []
    assert [memory.text for memory in extract_memories("I lost a glove by the stall, have you seen it?", turn=1)] == [
        "I lost a glove by the stall."
    ]
    assert extract_memories("When I'm gone back inland, where will you send my letters?", turn=1) == []
    told = extract_memories("When I was young I lived in Tarsk, have you been?", turn=1)
    assert [memory.text for memory in told] == ["When I was young I lived in Tarsk."]


@pytest.mark.parametrize(
    ("question", "statement"),
    [
        ("what was I calling my dog earlier?", "You've got a scruffy terrier at home called Pickle."),
        ("And where did I say I'd come over from?", "You came over here from Kraków."),
    ],
)
def test_the_clause_that_holds_the_answer_is_said_not_the_players_whole_line(question: str, statement: str) -> None:
    memories = ["A bit about me: I've got a scruffy terrier at home called Pickle, and I came over here from Kraków."]
    found = recollected(question, memories)
    assert found is not None and found[0] == statement


FILLER = [
    "I walked along the harbour wall this morning.",
    "The gulls were fighting over a crust of bread.",
    "I bought a loaf from the baker by the square.",
    "My boots let the water in, they always do.",
]


@pytest.mark.parametrize(
    ("fact", "question", "answer"),
    [
        (
            "I'm allergic to strawberries, they bring me out in blotches.",
            "If you made me a pudding, what would you have to leave out?",
            "strawberries",
        ),
        ("Snakes give me the creeps, always have.", "What would have me running out of the cellar?", "snakes"),
        ("I've been a wheelwright by trade for twenty years.", "What do folk pay me to do?", "wheelwright"),
        ("Everyone calls me Rowena.", "If you had to shout for me across the square, what would you shout?", "Rowena"),
        (
            "I always carry my mother's silver thimble in my coat.",
            "What have I got tucked in my coat, do you think?",
            "thimble",
        ),
    ],
)
def test_an_indirect_question_is_answered_by_the_sentence_telling_the_kind_of_fact_it_asks_for(
    fact: str, question: str, answer: str
) -> None:
    found = recollected(question, [*FILLER[:2], fact, *FILLER[2:]])
    assert found is not None and answer.lower() in found[0].lower()


@pytest.mark.parametrize(
    "question",
    [
        "Is that a gull I can hear, or the wind?",
        "Would it help if I lit the lamp?",
        "Was that the bell I heard just now?",
    ],
)
def test_a_yes_or_no_question_about_the_world_is_not_answered_from_what_the_player_told(question: str) -> None:
    assert recollected(question, [*FILLER, "I'm a cooper by trade."]) is None


def test_the_players_name_matters_most_of_all_they_tell() -> None:
    from inference.narrative.memory import importance_of

    assert importance_of("I'm Rowena, from up the valley.") == 1.0
    assert importance_of("I bought a loaf from the baker.") < 1.0


@pytest.mark.parametrize(
    "question",
    ["What do the fishermen drink here, ale I suppose?", "Where does the ferry stop in winter, I wonder?"],
)
def test_a_question_the_player_only_hedges_is_not_about_them(question: str) -> None:
    assert not asks_about_the_player(question)
    assert asks_about_the_player(question.replace("the fishermen", "I").replace("the ferry", "my ferry"))


@pytest.mark.parametrize(
    ("fact", "question"),
    [
        ("Wasps terrify me.", "If we hear buzzing by the window, why would I bolt?"),
        ("I keep three hives of bees behind my cottage.", "If you wanted honey, why would you come to me?"),
        ("I repair clocks for a living.", "If your mantel clock stopped, why should you bring it to me?"),
        ("I can't swim a stroke.", "Why would I refuse to row out with you?"),
    ],
)
def test_a_supposing_question_is_answered_by_the_players_lasting_fact_nearest_in_meaning(
    fact: str, question: str
) -> None:
    told_on_the_way = [
        "I bought a loaf from a baker in the square this morning.",
        "I saw a heron standing in the reeds.",
        "A carter gave me a lift as far as the mill.",
    ]
    found = recollect(question, EMBEDDER.embed([question])[0], [*told_on_the_way, fact], EMBEDDER)
    assert found is not None
    assert found.sentence == fact


@pytest.mark.parametrize(
    ("question", "about"),
    [
        ("If I got lost in the fog, where would you send word?", True),
        ("What could I take out of my bag to help?", True),
        ("Why might I be the one to fix it?", True),
        ("What should I call you?", False),
        ("So the lamp's really out? I couldn't see a thing.", False),
        ("I'm sorry. What was your sister like?", False),
    ],
)
def test_the_player_is_asked_about_only_within_the_question_sentence(question: str, about: bool) -> None:
    assert asks_about_the_player(question) is about


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who carries my parcels into town each week?", "person"),
        ("How many cousins did I say call me uncle?", "number"),
        ("Why wouldn't I mind if my house drifted down the canal?", "thing"),
        ("Which town should the letter go to?", "place"),
    ],
)
def test_the_question_word_decides_the_kind_of_answer_before_other_words(question: str, kind: str) -> None:
    assert answer_kind(question) == kind


@given(st.sampled_from(["thirteen", "fourteen", "seventeen", "sixty", "ninety-nine", "a dozen", "twenty three"]))
def test_every_number_word_is_a_number_span(number: str) -> None:
    assert answer_span(f"I have moved house {number} times.", "number").startswith(number.split("-")[0].split()[0])


def test_a_question_about_the_player_named_only_in_its_opening_clause_is_answered() -> None:
    memories = ["I'm Perrin.", "My sister Oona sells eels.", "I walked up from the ferry."]
    question = "if someone comes by asking after me, what name should you tell them to call out?"
    found = recollected(question, memories)
    assert found is not None and found[1] == "Perrin" and "Perrin" in found[0]


@pytest.mark.parametrize(
    ("question", "kind"),
    [("When I come back next spring, where will I have been?", "place"), ("When was I born, what year?", "number")],
)
def test_a_when_that_opens_a_clause_leaves_the_question_to_the_next_question_word(question: str, kind: str) -> None:
    assert answer_kind(question) == kind


@given(
    st.sampled_from(["I should warn you, ", "And I must tell you: ", "To be honest, ", "Fair warning, ", ""]),
    st.sampled_from(["I panic in cellars.", "Moths frighten me.", "I can't abide eels."]),
)
def test_the_fact_is_said_back_without_the_words_that_turned_to_the_listener(frame: str, fact: str) -> None:
    said = statement_of(f"{frame}{fact}", "", "why would I refuse?", "thing")
    assert said == to_second_person(fact)


# What a player told over forty turns of the evaluation's filler, as recalled for "whats the name of my dog":
# other people's animals and people called this or that, nothing of a dog of the player's.
EVENING = [
    "An old sheepdog called Shep sat by the gate all afternoon.",
    "I saw a seal pup asleep on the shingle.",
    "Somebody's terrier dug a hole right through the vegetable patch.",
    "A lad named Piran sold me a bag of hot chestnuts.",
    "A stray kitten tried to climb into my coat.",
    "There's a ginger cat named Nutmeg who sleeps on the ticket office roof.",
    "My dream is to ride a camel across the desert one day.",
    "The gulls here are bolder than any I've ever seen.",
    "An old mule named Bartholomew carries the post up the hill.",
    "The landlady, Mrs Pritchard, keeps geese in her yard.",
    "A goat called Mildred ate half a straw hat while I watched.",
    "A drover called Caradoc was driving cattle down to market.",
    "A fisherman called Oswin showed me how to mend a torn net.",
    "A peddler called Ignatius tried to sell me a tin saucepan.",
]


def test_a_name_that_only_fits_the_questions_form_is_not_said_as_the_answer() -> None:
    # "A lad named Piran" holds a name and the player's "me", and is no nearer the question than the rest.
    assert recollected("whats the name of my dog", EVENING) is None


def test_the_players_own_dog_is_found_in_the_same_evening() -> None:
    assert recollected("whats the name of my dog", [*EVENING, "My dog is called Biscuit."]) == (
        "Your dog is called Biscuit.",
        "Biscuit",
    )


def test_the_players_own_sentence_far_nearest_a_question_no_rule_types_is_said_back_whole() -> None:
    told = [*EVENING, "I was born on Christmas Day, so I only ever got one lot of presents."]
    assert recollected("Why do I always feel a bit short-changed in December?", told) == (
        "You were born on Christmas Day, so you only ever got one lot of presents.",
        "I was born on Christmas Day, so I only ever got one lot of presents.",
    )
    assert recollected("Why do I always feel a bit short-changed in December?", EVENING) is None


@given(others=st.lists(st.floats(-0.2, 0.6), min_size=4, max_size=30).filter(lambda values: np.std(values) > 0.01))
def test_a_cosine_no_higher_than_the_rest_never_stands_out(others: list[float]) -> None:
    cosines = np.array([*others, float(np.mean(others))])
    assert not stands_out(len(others), cosines, 0.5, RecollectionConfig(), unjudged=True)


@given(others=st.lists(st.floats(-0.2, 0.6), min_size=0, max_size=3), cosine=st.floats(-0.2, 0.9))
def test_too_few_other_sentences_leave_the_answer_unjudged(others: list[float], cosine: float) -> None:
    for unjudged in (True, False):
        assert (
            stands_out(len(others), np.array([*others, cosine]), 1.0, RecollectionConfig(), unjudged=unjudged)
            is unjudged
        )


@pytest.mark.parametrize(
    "question",
    [
        "Tell me about the fishing boats that come home in the dark.",
        "Can you tell me about the storm?",
        "So show me the lamp room?",
        "What is that ticking sound I hear up near the lantern room?",
        "Who is the guardian of the causeway I've heard about?",
        "My hands are numb from the cold; may I warm them by your stove?",
    ],
)
def test_a_request_or_a_question_about_what_the_player_perceives_is_no_question_about_the_player(question: str) -> None:
    assert not asks_about_the_player(question)


@pytest.mark.parametrize(
    "question",
    [
        "Tell me about my brother, what was he called?",
        "When you write to tell me the lamp is lit, which town goes on the envelope?",
        "Which bird did I say I saw on the way here?",
        "What could I pull out of my pocket?",
    ],
)
def test_a_question_about_the_player_after_tell_me_is_still_one(question: str) -> None:
    assert asks_about_the_player(question)


def test_what_i_told_you_i_was_called_asks_for_the_players_own_name() -> None:
    memories = ["I'm Rosalind, and I keep bees on my allotment.", "I met a sailor named Bram."]
    assert recollected("By the way, what did I tell you I was called?", memories) == (
        "Your name is Rosalind.",
        "Rosalind",
    )


NAME_GIVEN_FRAMES = (
    "If the lifeboat crew ask who sat with you tonight, what name will you give them?",
    "When you write up the night in your diary, which name goes beside mine?",
    "Whose name should the postman look for on my parcel?",
    "If a stranger comes asking after me, what name would you tell him to shout?",
    "What will you call across the yard when I come back in spring?",
    "What shall you put down as your visitor's name in the book?",
)


@settings(max_examples=30, deadline=None)
@given(frame=st.sampled_from(NAME_GIVEN_FRAMES), name=st.sampled_from(["Oriel", "Tamsin", "Bartholomew", "Yusra"]))
def test_asked_for_the_name_the_character_will_give_them_by_the_player_is_told_their_own(frame: str, name: str) -> None:
    memories = [
        f"Good evening, I'm {name}.",
        "I met a ferryman called Aldo on the quay.",
        "My sister Hedda keeps goats.",
        "I came over from Portreath this morning.",
        "The wind was cold on the cliff path.",
    ]
    assert asks_own_name(frame)
    assert recollected(frame, memories) == (f"Your name is {name}.", name)


@pytest.mark.parametrize(
    "question",
    [
        "If somebody saw my boat, what name would they read on her bow?",
        "What name does my dog answer to?",
        "Which name is the inn down the lane known by?",
        "Why should you give me a shout if the pump breaks?",
    ],
)
def test_a_name_asked_of_something_of_the_players_or_a_reason_is_not_their_own_name(question: str) -> None:
    assert not asks_own_name(question)
    memories = ["Name's Oriel.", "I came over from Portreath.", "The gulls were loud.", "The tea was cold."]
    found = recollected(question, memories)
    assert found is None or found[1] != "Oriel"


def test_the_name_the_player_last_told_is_the_one_they_go_by_not_the_accounts() -> None:
    assert name_told(["Evening! I'm Oriel.", "Tell me about the lamp."], []) == "Oriel"
    assert name_told(["Call me Tam.", "Actually, my real name is Tamsin."], []) == "Tamsin"
    recalled = ["I keep bees.", "Ignore the username, my actual name is Yusra."]
    assert name_told(["Tell me about the lamp."], recalled) == "Yusra"
    assert name_told(["What's my name?", "Is the lamp lit?"], ["My dog is called Rufus."]) == ""


@pytest.mark.parametrize(
    "question",
    [
        "If you wanted to write to me, where would you send the letter?",
        "If you ever came to visit me, which town would you ask the coachman for?",
        "When I take the bus home tomorrow, which stop will I be asking for?",
    ],
)
def test_a_home_told_without_an_i_answers_where_to_find_the_player(question: str) -> None:
    memories = [
        "Name's Oriel, by the way.",
        "Came over from Ravensholt on the early boat, it's a mill town inland.",
        "My cousin is waiting in the cart.",
        "The gulls were loud on the quay.",
        "The tea here is strong.",
    ]
    found = recollected(question, memories)
    assert found is not None and found[1] == "Ravensholt"
    assert found[0].startswith("You came over from Ravensholt")


@pytest.mark.parametrize(
    "question",
    [
        "If your boat's hull sprang a leak, why would I be the person to fetch?",
        "If a traveller needed his boots resoled, why should you send him my way?",
        "Why would I, of all people, know what your cracked old saddle needs?",
    ],
)
def test_asked_why_they_are_the_one_to_call_on_the_player_is_told_their_trade(question: str) -> None:
    memories = [
        "Name's Oriel, by the way.",
        "I'm a cobbler by trade, boots and saddles mostly.",
        "My cousin is waiting in the cart.",
        "The gulls were loud on the quay.",
        "I saw a seal on the rocks this morning.",
    ]
    found = recollected(question, memories)
    assert found is not None and "cobbler" in found[0]


def test_a_newcomers_casual_introduction_comes_back_whatever_comes_before_the_question() -> None:
    line = "Evening Eve! Name's Dorvald. Walked up from Polperro this afternoon, cooper by trade, I make barrels."
    memories = [
        *(memory.text for memory in extract_memories(line, turn=0)),
        *(memory.text for memory in extract_memories("Sorry, my head's full of wind.", turn=0)),
        "The stairs creak like something is walking on them.",
        "I like the sea.",
        "The lamp looks enormous.",
    ]
    named = recollected("Sorry, my head's full of wind. What did I say my name was?", memories)
    assert named == ("Your name is Dorvald.", "Dorvald")
    asked = "Suppose you wanted to pay me a visit once the weather clears. Which town would you tell the driver?"
    found = recollected(asked, memories)
    assert found is not None and found[1] == "Polperro" and found[0].startswith("You walked up from Polperro")
