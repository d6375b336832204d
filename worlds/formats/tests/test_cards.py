"""Character cards V1, V2 and V3, as JSON and in PNG chunks, with the fixtures' real files."""

from __future__ import annotations

import base64
import io
import json
import random
from collections.abc import Callable

import pytest
from PIL import Image

from worlds.formats import (
    CardAsset,
    CharacterCard,
    FormatError,
    Lorebook,
    LoreEntry,
    card_from_json,
    card_from_png,
    card_to_json,
    card_to_png,
)
from worlds.formats.lorebooks import POSITIONS, SELECTIVE_LOGICS
from worlds.formats.png_chunks import read_chunks, text_chunk, text_chunks, write_chunks
from worlds.formats.tests.generators import random_json, random_text, random_word, seeded


def test_a_v2_card_reads_every_field(fixture_bytes: Callable[[str], bytes]) -> None:
    card = card_from_json(fixture_bytes("eve_card_v2.json"))
    assert card.name == "Eve"
    assert card.description.startswith("Eve keeps the Saltmarsh Light")
    assert card.personality.startswith("dry-humoured")
    assert card.first_mes.startswith("*The door sticks")
    assert card.mes_example.startswith("<START>\n{{user}}")
    assert card.post_history_instructions.startswith("Keep Eve's replies")
    assert len(card.alternate_greetings) == 2
    assert card.tags == ("lighthouse", "coastal", "slice of life")
    assert (card.creator, card.character_version) == ("worldloom-fixtures", "1.2")
    assert card.creator_notes.startswith("A quiet coastal character")
    assert card.nickname is None
    assert card.assets is None


def test_a_v2_card_keeps_unknown_extensions_and_data_fields(fixture_bytes: Callable[[str], bytes]) -> None:
    card = card_from_json(fixture_bytes("eve_card_v2.json"))
    assert card.extensions["depth_prompt"] == {
        "prompt": "Eve notices the weather before anything else.",
        "depth": 4,
        "role": "system",
    }
    assert card.extensions["x_worldloom_fixture"]["kept"] == [1, {"nested": True}]
    assert card.unknown == {"x_gallery_folder": "Coast"}


def test_a_v2_card_reads_its_embedded_lorebook(fixture_bytes: Callable[[str], bytes]) -> None:
    book = card_from_json(fixture_bytes("eve_card_v2.json")).character_book
    assert book is not None
    assert book.name == "Saltmarsh Light"
    lighthouse, causeway, brine, fog = book.entries
    assert lighthouse.keys == ("lighthouse", "the light", "lamp")
    assert causeway.selective
    assert causeway.secondary_keys == ("cross", "walk")
    assert brine.position == "at_depth"
    assert brine.case_sensitive is True
    assert brine.exclude_recursion is True
    assert fog.constant
    assert fog.prevent_recursion
    assert lighthouse.extensions["vectorized"] is False


def test_a_v3_card_reads_its_v3_fields(fixture_bytes: Callable[[str], bytes]) -> None:
    card = card_from_json(fixture_bytes("eve_card_v3.json"))
    assert card.nickname == "Evie"
    assert card.creator_notes_multilingual == {
        "en": "Character Card V3 edition, with a lorebook and assets.",
        "fr": "Édition Character Card V3, avec un lorebook et des ressources.",
    }
    assert card.source == ("https://example.org/cards/eve-of-saltmarsh",)
    assert len(card.group_only_greetings) == 1
    assert (card.creation_date, card.modification_date) == (1718028131, 1722433200)
    assert card.assets[0] == CardAsset(type="icon", uri="ccdefault:", name="main", ext="png")
    assert card.assets[2].uri == "embeded://assets/emotion/images/happy.png"
    assert card.unknown == {"x_card_site_rating": "sfw"}
    book = card.character_book
    assert (book.scan_depth, book.token_budget, book.recursive_scanning) == (4, 400, True)
    assert book.entries[1].keys == ("/\\bfog(horn)?s?\\b/i",)
    assert book.entries[2].enabled is False


def test_a_v1_card_is_upgraded(fixture_bytes: Callable[[str], bytes]) -> None:
    card = card_from_json(fixture_bytes("eve_card_v1.json"))
    assert card.name == "Eve"
    assert card.first_mes == "You picked a poor evening to walk the causeway. Tide's in until four."
    assert card.creator_notes == ""
    assert card.unknown["avatar"] == "none"
    upgraded = json.loads(card_to_json(card, version=2))
    assert upgraded["spec"] == "chara_card_v2"
    assert upgraded["data"]["mes_example"].startswith("<START>")


def test_creator_notes_are_documented_as_never_for_prompts() -> None:
    assert "never reach a prompt" in CharacterCard.__doc__


@pytest.mark.parametrize(("fixture", "version"), [("eve_card_v2.json", 2), ("eve_card_v3.json", 3)])
def test_a_card_json_round_trips(fixture_bytes: Callable[[str], bytes], fixture: str, version: int) -> None:
    card = card_from_json(fixture_bytes(fixture))
    written = card_to_json(card, version=version)
    assert card_from_json(written) == card
    assert json.loads(written)["spec"] == f"chara_card_v{version}"


def test_unknown_extension_keys_are_written_back_verbatim(fixture_bytes: Callable[[str], bytes]) -> None:
    original = json.loads(fixture_bytes("eve_card_v2.json"))["data"]
    written = json.loads(card_to_json(card_from_json(fixture_bytes("eve_card_v2.json")), version=2))["data"]
    assert written["extensions"] == original["extensions"]
    assert written["x_gallery_folder"] == "Coast"
    for original_entry, written_entry in zip(
        original["character_book"]["entries"], written["character_book"]["entries"], strict=True
    ):
        assert written_entry["extensions"] == original_entry["extensions"]


def test_a_v2_export_of_a_v3_card_leaves_out_the_v3_fields(fixture_bytes: Callable[[str], bytes]) -> None:
    card = card_from_json(fixture_bytes("eve_card_v3.json"))
    data = json.loads(card_to_json(card, version=2))["data"]
    assert "nickname" not in data
    assert "assets" not in data
    assert data["name"] == "Eve"


def test_a_card_version_other_than_two_or_three_is_refused() -> None:
    with pytest.raises(ValueError, match="version must be 2 or 3"):
        card_to_json(CharacterCard(name="Eve"), version=1)


# PNG


def test_a_v2_png_card_reads_from_its_chara_chunk(fixture_bytes: Callable[[str], bytes]) -> None:
    assert card_from_png(fixture_bytes("eve_card_v2.png")) == card_from_json(fixture_bytes("eve_card_v2.json"))


def test_a_png_with_both_chunks_reads_the_ccv3_one(fixture_bytes: Callable[[str], bytes]) -> None:
    card = card_from_png(fixture_bytes("eve_card_v3.png"))
    assert card == card_from_json(fixture_bytes("eve_card_v3.json"))
    assert card.nickname == "Evie"


def test_writing_a_png_card_puts_in_both_chunks(fixture_bytes: Callable[[str], bytes]) -> None:
    card = card_from_json(fixture_bytes("eve_card_v3.json"))
    texts = text_chunks(read_chunks(card_to_png(card, fixture_bytes("plain_portrait.png"))))
    chara = json.loads(base64.b64decode(texts["chara"]))
    ccv3 = json.loads(base64.b64decode(texts["ccv3"]))
    assert (chara["spec"], chara["spec_version"]) == ("chara_card_v2", "2.0")
    assert (ccv3["spec"], ccv3["spec_version"]) == ("chara_card_v3", "3.0")
    assert ccv3["data"]["nickname"] == "Evie"
    assert texts["software"] == "GIMP 2.10.36"  # other chunks are kept


def test_writing_a_png_card_replaces_the_chunks_already_there(fixture_bytes: Callable[[str], bytes]) -> None:
    renamed = CharacterCard(name="Eve Marrow", description="Keeper.")
    png = card_to_png(renamed, fixture_bytes("eve_card_v3.png"))
    chunks = read_chunks(png)
    keywords = [chunk.data.partition(b"\x00")[0] for chunk in chunks if chunk.kind == b"tEXt"]
    assert sorted(keywords) == [b"ccv3", b"chara"]
    assert card_from_png(png) == renamed
    assert [chunk.kind for chunk in chunks][-3:] == [b"tEXt", b"tEXt", b"IEND"]


def test_the_image_pixels_survive_writing_a_card(fixture_bytes: Callable[[str], bytes]) -> None:
    portrait = fixture_bytes("plain_portrait.png")
    written = card_to_png(CharacterCard(name="Eve"), portrait)
    assert Image.open(io.BytesIO(written)).tobytes() == Image.open(io.BytesIO(portrait)).tobytes()


def test_a_card_without_an_image_gets_a_valid_placeholder_png() -> None:
    png = card_to_png(CharacterCard(name="Eve"), None)
    image = Image.open(io.BytesIO(png))
    image.verify()
    assert image.size == (400, 600)
    assert card_from_png(png) == CharacterCard(name="Eve")


def test_a_png_card_round_trips(fixture_bytes: Callable[[str], bytes]) -> None:
    card = card_from_png(fixture_bytes("eve_card_v3.png"))
    assert card_from_png(card_to_png(card, fixture_bytes("eve_card_v3.png"))) == card


def test_a_truncated_png_is_refused_clearly(fixture_bytes: Callable[[str], bytes]) -> None:
    with pytest.raises(FormatError) as raised:
        card_from_png(fixture_bytes("truncated_card.png"))
    assert raised.value.format == "card-png"
    assert "file is truncated" in str(raised.value)


def test_a_png_without_a_card_chunk_is_refused_clearly(fixture_bytes: Callable[[str], bytes]) -> None:
    with pytest.raises(FormatError) as raised:
        card_from_png(fixture_bytes("plain_portrait.png"))
    assert str(raised.value) == "card-png: this PNG holds no character card (no 'chara' or 'ccv3' text chunk)"


def test_a_png_card_with_a_bad_crc_is_refused(fixture_bytes: Callable[[str], bytes]) -> None:
    png = bytearray(fixture_bytes("eve_card_v2.png"))
    png[png.index(b"chara") + 20] ^= 0x01
    with pytest.raises(FormatError, match="CRC mismatch in the tEXt chunk"):
        card_from_png(bytes(png))


def test_a_card_chunk_that_is_not_base64_is_refused(fixture_bytes: Callable[[str], bytes]) -> None:
    chunks = read_chunks(fixture_bytes("plain_portrait.png"))
    png = write_chunks([*chunks[:-1], text_chunk("chara", "not base64 at all!"), chunks[-1]])
    with pytest.raises(FormatError) as raised:
        card_from_png(png)
    assert str(raised.value) == "card-png: chara chunk: is not valid base64"


def test_a_card_chunk_with_invalid_json_names_chunk_line_and_column(fixture_bytes: Callable[[str], bytes]) -> None:
    chunks = read_chunks(fixture_bytes("plain_portrait.png"))
    broken = base64.b64encode(b'{"spec": "chara_card_v3",\n "data": {"name": }}').decode()
    png = write_chunks([*chunks[:-1], text_chunk("ccv3", broken), chunks[-1]])
    with pytest.raises(FormatError) as raised:
        card_from_png(png)
    assert str(raised.value) == "card-png: ccv3: line 2 column 19: invalid JSON: Expecting value"


def test_an_image_that_is_not_a_png_is_refused_when_writing() -> None:
    with pytest.raises(FormatError, match="not a PNG file"):
        card_to_png(CharacterCard(name="Eve"), b"\xff\xd8\xff\xe0 a JPEG")


def test_an_oversized_png_card_is_refused() -> None:
    with pytest.raises(FormatError, match="over the limit of 8388608 bytes"):
        card_from_png(b"\x89PNG\r\n\x1a\n" + bytes(8 * 1024 * 1024))


# Malformed JSON cards


def test_a_card_with_the_wrong_spec_is_refused() -> None:
    with pytest.raises(FormatError) as raised:
        card_from_json(b'{"spec": "chara_card_v4", "data": {"name": "Eve"}}')
    assert str(raised.value) == "card-json: spec: must be 'chara_card_v2' or 'chara_card_v3', not 'chara_card_v4'"


def test_a_card_with_data_but_no_spec_is_refused() -> None:
    with pytest.raises(FormatError, match="spec: is missing"):
        card_from_json(b'{"data": {"name": "Eve"}}')


def test_json_that_is_no_card_at_all_is_refused() -> None:
    with pytest.raises(FormatError, match="this is no V1 card either"):
        card_from_json(b'{"title": "Harbour Lights"}')


def test_a_card_without_a_name_is_refused() -> None:
    with pytest.raises(FormatError) as raised:
        card_from_json(b'{"spec": "chara_card_v2", "data": {"name": "  ", "description": "x"}}')
    assert str(raised.value) == "card-json: data.name: must be a non-empty string"


def test_invalid_card_json_names_line_and_column() -> None:
    with pytest.raises(FormatError) as raised:
        card_from_json('{\n  "spec": "chara_card_v2",\n  "data": {"name": "Eve",}\n}')
    assert str(raised.value).startswith("card-json: line 3 column 26: invalid JSON:")


def test_a_wrongly_typed_field_deep_in_the_book_names_its_path() -> None:
    card = {
        "spec": "chara_card_v2",
        "data": {
            "name": "Eve",
            "character_book": {
                "entries": [{"keys": ["a"], "content": "b"}, {"keys": ["a"], "content": "b", "enabled": "yes"}]
            },
        },
    }
    with pytest.raises(FormatError) as raised:
        card_from_json(json.dumps(card))
    assert str(raised.value) == "card-json: data.character_book.entries[1].enabled: must be true or false"


def test_an_oversized_card_json_is_refused() -> None:
    with pytest.raises(FormatError, match="over the limit of 2097152 bytes"):
        card_from_json(b" " * (2 * 1024 * 1024 + 1))


def test_text_is_kept_as_text_not_escaped_for_html() -> None:
    card = card_from_json('{"spec": "chara_card_v2", "data": {"name": "<b>Eve</b> & co"}}')
    assert card.name == "<b>Eve</b> & co"


# Round trips over many random cards (a property test; hypothesis is not installed)


def random_entry(rolls: random.Random) -> LoreEntry:
    return LoreEntry(
        keys=[random_text(rolls, max_length=8) for _ in range(rolls.randint(0, 3))],
        content=random_text(rolls),
        secondary_keys=[random_text(rolls, max_length=8) for _ in range(rolls.randint(0, 2))],
        selective=rolls.random() < 0.5,
        selective_logic=rolls.choice(SELECTIVE_LOGICS),
        insertion_order=rolls.randint(-50, 500),
        constant=rolls.random() < 0.2,
        enabled=rolls.random() < 0.8,
        case_sensitive=rolls.choice([None, True, False]),
        match_whole_words=rolls.choice([None, True, False]),
        use_regex=rolls.random() < 0.2,
        position=rolls.choice(POSITIONS),
        priority=rolls.choice([None, rolls.randint(0, 100)]),
        name=rolls.choice([None, random_text(rolls, max_length=8)]),
        comment=random_text(rolls, max_length=10),
        id=rolls.choice([None, rolls.randint(0, 9999), random_word(rolls)]),
        probability=rolls.randint(0, 100),
        use_probability=rolls.random() < 0.5,
        exclude_recursion=rolls.random() < 0.3,
        prevent_recursion=rolls.random() < 0.3,
        extensions={f"x_{random_word(rolls)}": random_json(rolls) for _ in range(rolls.randint(0, 3))},
        unknown={f"x_{random_word(rolls)}": random_json(rolls) for _ in range(rolls.randint(0, 2))},
    )


def random_card(rolls: random.Random, *, version: int) -> CharacterCard:
    book = None
    if rolls.random() < 0.7:
        book = Lorebook(
            entries=[random_entry(rolls) for _ in range(rolls.randint(0, 5))],
            name=rolls.choice([None, random_text(rolls, max_length=10)]),
            description=rolls.choice([None, random_text(rolls)]),
            scan_depth=rolls.choice([None, rolls.randint(0, 20)]),
            token_budget=rolls.choice([None, rolls.randint(0, 4000)]),
            recursive_scanning=rolls.choice([None, True, False]),
            extensions={f"x_{random_word(rolls)}": random_json(rolls) for _ in range(rolls.randint(0, 2))},
            unknown={f"x_{random_word(rolls)}": random_json(rolls) for _ in range(rolls.randint(0, 2))},
        )
    v3 = version == 3
    return CharacterCard(
        name=random_word(rolls) + random_text(rolls, max_length=10),
        description=random_text(rolls),
        personality=random_text(rolls),
        scenario=random_text(rolls),
        first_mes=random_text(rolls),
        mes_example=random_text(rolls),
        creator_notes=random_text(rolls),
        system_prompt=random_text(rolls),
        post_history_instructions=random_text(rolls),
        alternate_greetings=[random_text(rolls) for _ in range(rolls.randint(0, 3))],
        tags=[random_word(rolls) for _ in range(rolls.randint(0, 4))],
        creator=random_text(rolls, max_length=10),
        character_version=random_text(rolls, max_length=5),
        extensions={f"x_{random_word(rolls)}": random_json(rolls) for _ in range(rolls.randint(0, 4))},
        character_book=book,
        nickname=random_text(rolls, max_length=8) if v3 and rolls.random() < 0.5 else None,
        creator_notes_multilingual={"en": random_text(rolls), "fr": random_text(rolls)} if v3 else None,
        source=[random_text(rolls, max_length=20)] if v3 else None,
        group_only_greetings=[random_text(rolls)] if v3 else [],
        creation_date=rolls.choice([None, rolls.randint(0, 2_000_000_000), rolls.random() * 1e9]) if v3 else None,
        modification_date=rolls.choice([None, 0]) if v3 else None,
        assets=[CardAsset(type="icon", uri="ccdefault:", name="main", ext="png")] if v3 else None,
        unknown={f"x_{random_word(rolls)}": random_json(rolls) for _ in range(rolls.randint(0, 2))},
    )


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("version", [2, 3])
def test_any_card_round_trips_through_json(seed: int, version: int) -> None:
    card = random_card(seeded(seed), version=version)
    assert card_from_json(card_to_json(card, version=version)) == card


@pytest.mark.parametrize("seed", range(15))
def test_any_card_round_trips_through_png(seed: int) -> None:
    card = random_card(seeded(seed), version=3)
    assert card_from_png(card_to_png(card)) == card
