"""Twine Twee 3: passages, StoryData, the four link forms, escaping, validation and round trips."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from worlds.formats import FormatError, TwinePassage, TwineStory, twee_link, twee_parse, twee_serialise
from worlds.formats.tests.generators import random_text, random_word, seeded

MINIMAL_HEADER = ':: StoryData\n{"ifid": "D674C58C-DEFA-4F70-B7A2-27742230C0FC"}\n\n'


def test_a_twine_story_reads_its_title_and_story_data(fixture_bytes: Callable[[str], bytes]) -> None:
    story = twee_parse(fixture_bytes("harbour_lights.twee"))
    assert story.title == "Harbour Lights"
    assert story.ifid == "7C1E2B5A-3F4D-4A8E-9B61-2D0C5E8F1A34"
    assert (story.story_format, story.story_format_version) == ("Harlowe", "3.3.8")
    assert story.start == story.start_passage == "Causeway at Dusk"
    assert story.tag_colors == {"ending": "red", "lighthouse": "yellow"}
    assert story.zoom == 0.6
    assert [passage.name for passage in story.passages][:2] == ["Causeway at Dusk", "Lighthouse Door"]
    assert len(story.passages) == 9


def test_passages_read_tags_metadata_and_text(fixture_bytes: Callable[[str], bytes]) -> None:
    door = twee_parse(fixture_bytes("harbour_lights.twee")).passage("Lighthouse Door")
    assert door.tags == ("lighthouse",)
    assert door.metadata == {"position": "250,100", "size": "100,100"}
    assert door.text.startswith("The door sticks, then gives.")
    assert door.text.endswith("[[Ask about the ninth step->The Ninth Step {sic}]]")


def test_every_link_form_gives_its_text_and_target(fixture_bytes: Callable[[str], bytes]) -> None:
    story = twee_parse(fixture_bytes("harbour_lights.twee"))
    assert story.passage("Causeway at Dusk").links == (
        ("Run for the lighthouse", "Lighthouse Door"),
        ("Turn back to Brine", "Brine Quay"),
    )
    assert story.passage("Lighthouse Door").links[0] == ("Climb the stairs", "Climb the stairs")
    assert story.passage("Climb the stairs").links == (("Keep climbing", "Lamp Room"),)


def test_escaped_characters_in_a_passage_name_are_read(fixture_bytes: Callable[[str], bytes]) -> None:
    story = twee_parse(fixture_bytes("harbour_lights.twee"))
    assert story.passage("The Ninth Step {sic}") is not None


def test_a_text_line_starting_with_two_colons_is_unescaped(fixture_bytes: Callable[[str], bytes]) -> None:
    lamp_room = twee_parse(fixture_bytes("harbour_lights.twee")).passage("Lamp Room")
    assert "\n:: this line starts with two colons in the story text\n" in lamp_room.text


def test_script_passages_hold_no_links(fixture_bytes: Callable[[str], bytes]) -> None:
    script = twee_parse(fixture_bytes("harbour_lights.twee")).passage("Story JavaScript")
    assert "[[0, 0], [0, 0]]" in script.text
    assert script.links == ()


def test_the_fixture_is_written_back_byte_for_byte(fixture_bytes: Callable[[str], bytes]) -> None:
    source = fixture_bytes("harbour_lights.twee").decode()
    assert twee_serialise(twee_parse(source)) == source


def test_a_link_to_a_missing_passage_names_both(fixture_bytes: Callable[[str], bytes]) -> None:
    with pytest.raises(FormatError) as raised:
        twee_parse(fixture_bytes("broken_link.twee"))
    assert str(raised.value) == "twee: passage 'Docks': links to 'Lighthouse', which is no passage"


@pytest.mark.parametrize(
    ("markup", "link"),
    [
        ("[[Lamp Room]]", ("Lamp Room", "Lamp Room")),
        ("[[Go up->Lamp Room]]", ("Go up", "Lamp Room")),
        ("[[Lamp Room<-Go up]]", ("Go up", "Lamp Room")),
        ("[[Go up|Lamp Room]]", ("Go up", "Lamp Room")),
        ("[[a->b->Lamp Room]]", ("a->b", "Lamp Room")),  # the rightmost -> divides
        ("[[Lamp Room<-a<-b]]", ("a<-b", "Lamp Room")),  # the leftmost <- divides
        ("[[Go up|Lamp Room][$lit to true]]", ("Go up", "Lamp Room")),  # a SugarCube setter
    ],
)
def test_link_markup_reads_as_twine_reads_it(markup: str, link: tuple[str, str]) -> None:
    source = MINIMAL_HEADER + f":: Start\n{markup}\n\n:: Lamp Room\nThe lens.\n"
    assert twee_parse(source).passage("Start").links == (link,)


def test_links_to_web_addresses_are_not_passage_links() -> None:
    story = twee_parse(MINIMAL_HEADER + ":: Start\n[[Our site->https://example.org/harbour]]\n")
    assert story.passage("Start").links == ()


def test_without_a_start_in_story_data_the_start_passage_is_start() -> None:
    story = twee_parse(MINIMAL_HEADER + ":: Start\nHello.\n")
    assert story.start is None
    assert story.start_passage == "Start"


def test_a_story_without_a_start_passage_is_refused() -> None:
    with pytest.raises(FormatError, match="names no start passage, and there is no passage called 'Start'"):
        twee_parse(MINIMAL_HEADER + ":: Docks\nHello.\n")


def test_a_start_that_names_a_missing_passage_is_refused() -> None:
    source = ':: StoryData\n{"ifid": "X", "start": "Pier"}\n\n:: Docks\nHello.\n'
    with pytest.raises(FormatError) as raised:
        twee_parse(source)
    assert str(raised.value) == "twee: StoryData.start: the start passage 'Pier' does not exist"


def test_invalid_story_data_json_names_line_and_column() -> None:
    with pytest.raises(FormatError) as raised:
        twee_parse(':: StoryData\n{\n  "ifid": "X",\n}\n\n:: Start\nHi\n')
    assert str(raised.value) == (
        "twee: passage 'StoryData': line 4 column 1: invalid JSON: Expecting property name enclosed in double quotes"
    )


def test_a_passage_defined_twice_is_refused() -> None:
    with pytest.raises(FormatError) as raised:
        twee_parse(MINIMAL_HEADER + ":: Start\nOne.\n\n:: Start\nTwo.\n")
    assert str(raised.value) == "twee: passage 'Start': is defined twice (again at line 7)"


def test_text_before_the_first_passage_is_refused() -> None:
    with pytest.raises(FormatError) as raised:
        twee_parse("Some notes\n" + MINIMAL_HEADER + ":: Start\nHi\n")
    assert str(raised.value) == "twee: line 1: text before the first passage header (a line starting '::')"


def test_a_file_without_passages_is_refused() -> None:
    with pytest.raises(FormatError, match="no passages"):
        twee_parse("\n\n")


def test_a_header_without_a_name_is_refused() -> None:
    with pytest.raises(FormatError, match="line 4: passage header has no name"):
        twee_parse(MINIMAL_HEADER + ":: [tag]\nHi\n")


def test_an_unclosed_tag_block_is_refused() -> None:
    with pytest.raises(FormatError, match="have no closing"):
        twee_parse(MINIMAL_HEADER + ":: Start [tag\nHi\n")


def test_text_after_the_tags_is_refused() -> None:
    with pytest.raises(FormatError, match="unexpected 'extra'"):
        twee_parse(MINIMAL_HEADER + ":: Start [tag] extra\nHi\n")


def test_metadata_that_does_not_decode_is_dropped_as_the_specification_asks() -> None:
    story = twee_parse(MINIMAL_HEADER + ':: Start {"position":"1,2"\nHi\n')
    assert story.passage("Start").metadata == {}


def test_an_oversized_twee_file_is_refused() -> None:
    with pytest.raises(FormatError, match="over the limit of 2097152 bytes"):
        twee_parse(":: Start\n" + "x" * (2 * 1024 * 1024))


def test_too_many_passages_are_refused() -> None:
    source = MINIMAL_HEADER + "".join(f":: P{index}\n" for index in range(5_001))
    with pytest.raises(FormatError, match="more than 5000 passages"):
        twee_parse(source)


def test_windows_line_ends_and_a_byte_order_mark_are_read() -> None:
    story = twee_parse(("\ufeff" + MINIMAL_HEADER + ":: Start\nOne\n\n\n").replace("\n", "\r\n").encode())
    assert story.passage("Start").text == "One"


def test_writing_refuses_a_story_with_a_broken_link() -> None:
    story = TwineStory(title="T", passages=[TwinePassage(name="Start", text="[[Nowhere]]")])
    with pytest.raises(FormatError, match="links to 'Nowhere'"):
        twee_serialise(story)


def test_writing_refuses_a_passage_with_a_special_name() -> None:
    story = TwineStory(title="T", passages=[TwinePassage(name="Start"), TwinePassage(name="StoryData")])
    with pytest.raises(FormatError, match="is a special passage"):
        twee_serialise(story)


def test_writing_refuses_a_tag_with_a_space() -> None:
    story = TwineStory(title="T", passages=[TwinePassage(name="Start", tags=["two words"])])
    with pytest.raises(FormatError, match="tag 'two words' must be non-empty and contain no spaces"):
        twee_serialise(story)


@pytest.mark.parametrize(
    ("text", "target", "markup"),
    [
        ("Lamp Room", "Lamp Room", "[[Lamp Room]]"),
        ("Go up", "Lamp Room", "[[Go up->Lamp Room]]"),
        ("Go up", "A<-B", "[[Go up->A<-B]]"),
        ("a->b", "Lamp Room", "[[a->b->Lamp Room]]"),
        ("A|B", "A|B", "[[A|B->A|B]]"),
    ],
)
def test_twee_link_writes_markup_that_reads_back(text: str, target: str, markup: str) -> None:
    assert twee_link(text, target) == markup


@pytest.mark.parametrize("target", ["b]]c", "x->y"])  # Twine reads the rightmost -> first, whatever the form
def test_twee_link_refuses_what_no_markup_can_hold(target: str) -> None:
    with pytest.raises(ValueError, match="no Twee link markup"):
        twee_link("a", target)


# Round trips over many random stories (a property test; hypothesis is not installed)


def random_story(rolls: random.Random) -> TwineStory:
    names: list[str] = []
    while len(names) < rolls.randint(1, 6):
        name = random_word(rolls) + random_text(rolls, max_length=8).replace("\n", " ").replace("\u2028", " ")
        if name.strip() and name not in names and name not in ("StoryTitle", "StoryData"):
            names.append(name)
    passages = []
    for name in names:
        parts = [random_text(rolls) for _ in range(rolls.randint(0, 3))]
        for _ in range(rolls.randint(0, 3)):
            target = rolls.choice(names)
            try:
                parts.append(twee_link(random_word(rolls), target))
            except ValueError:  # a random name no link markup can hold
                continue
        text = "\n".join(parts).replace("[[", "[ [")  # no accidental links beside the generated ones
        for _ in range(rolls.randint(0, 2)):
            text += "\n" + rolls.choice(["::", "\\::", "\\\\::"]) + random_text(rolls, max_length=8)
        tags = [random_word(rolls) + rolls.choice(["", "[", "]", "{", "}", "\\"]) for _ in range(rolls.randint(0, 3))]
        metadata = {"position": f"{rolls.randint(0, 900)},{rolls.randint(0, 900)}"} if rolls.random() < 0.7 else {}
        passages.append(TwinePassage(name=name, text=text, tags=tags, metadata=metadata))
    return TwineStory(
        title=random_text(rolls, max_length=20),
        passages=passages,
        ifid=rolls.choice([None, "7C1E2B5A-3F4D-4A8E-9B61-2D0C5E8F1A34"]),
        story_format=rolls.choice([None, "Harlowe", "SugarCube"]),
        story_format_version=rolls.choice([None, "3.3.8"]),
        start=rolls.choice(names),
        tag_colors={random_word(rolls): rolls.choice(["red", "green"]) for _ in range(rolls.randint(0, 2))},
        zoom=rolls.choice([None, 1, 0.6]),
        story_data_extra={"x_" + random_word(rolls): random_word(rolls)} if rolls.random() < 0.3 else {},
    )


@pytest.mark.parametrize("seed", range(150))
def test_any_story_round_trips_through_twee(seed: int) -> None:
    story = random_story(seeded(seed))
    assert twee_parse(twee_serialise(story)) == story


def test_a_passage_name_with_a_colon_and_one_slash_is_still_a_passage_link() -> None:
    story = twee_parse(MINIMAL_HEADER + ":: Start\n[[Go->Note:/1]]\n\n:: Note:/1\nA note.\n")
    assert story.passage("Start").links == (("Go", "Note:/1"),)
