"""Lorebooks in the three shapes creators bring: a card's `character_book`, `lorebook_v3` and World Info.

- `character_book`: the lorebook embedded in a Character Card V2 (spec by malfoyslastname,
  github.com/malfoyslastname/character-card-spec-v2) and V3 (spec by kwaroran,
  github.com/kwaroran/character-card-spec-v3), an object with an `entries` list.
- `lorebook_v3`: the CCv3 spec's stand-alone lorebook file, `{"spec": "lorebook_v3", "data": <character_book>}`.
- World Info: SillyTavern's lorebook file (docs.sillytavern.app, "World Info"), `{"entries": {"<uid>": {...}}}`
  with entries keyed by their uid and camelCase fields.

SillyTavern writes its World Info settings into a `character_book` entry's `extensions` when it exports a
card (and reads them back on import); we read them from there too, so a book behaves the same whichever
shape it arrives in. Field mapping, `LoreEntry` field: character_book entry / World Info entry:

    keys               keys                              key
    secondary_keys     secondary_keys                    keysecondary
    content            content                           content
    comment            comment                           comment
    name               name (AgnAI, Risu)                name (ours, written only when set)
    id                 id                                uid (also the entry's key in `entries`)
    enabled            enabled                           disable (negated)
    constant           constant                          constant
    selective          selective                         selective
    selective_logic    extensions.selectiveLogic 0..3    selectiveLogic 0..3
    insertion_order    insertion_order                   order
    priority           priority (AgnAI)                  priority (ours, written only when set)
    position           position + extensions.position    position 0..7
    case_sensitive     case_sensitive (else extensions.case_sensitive)   caseSensitive
    match_whole_words  extensions.match_whole_words      matchWholeWords
    use_regex          use_regex (V3)                    use_regex (ours, written only when set)
    probability        extensions.probability            probability
    use_probability    extensions.useProbability         useProbability
    exclude_recursion  extensions.exclude_recursion      excludeRecursion
    prevent_recursion  extensions.prevent_recursion      preventRecursion
    extensions         other extensions keys             other entry keys, camelCase names renamed as
                                                         SillyTavern does (depth, displayIndex -> display_index,
                                                         groupOverride -> group_override, ...; see
                                                         _WORLD_INFO_EXTENSION_NAMES)
    unknown            other entry keys                  (none: World Info has no separate bag)

Book level: name, description, scan_depth, token_budget, recursive_scanning and extensions are the
character_book fields; World Info files carry none of them (SillyTavern keeps those settings globally and
names a book after its file), and their `originalData`, SillyTavern's copy of the card book an import came
from, is dropped because it goes stale as soon as the book is edited.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from worlds.formats.errors import FormatError
from worlds.formats.json_input import JsonObject, dump_json, load_json
from worlds.formats.limits import MAX_LORE_ENTRIES
from worlds.formats.records import store_as_tuples

# SillyTavern's world_info_logic enum, in its numeric order 0..3.
SELECTIVE_LOGICS = ("and_any", "not_all", "not_any", "and_all")
# SillyTavern's world_info_position enum, in its numeric order 0..7. The card spec knows only the first two.
POSITIONS = (
    "before_char",
    "after_char",
    "author_note_top",
    "author_note_bottom",
    "at_depth",
    "example_messages_top",
    "example_messages_bottom",
    "outlet",
)


@dataclass(frozen=True)
class LoreEntry:
    """One lorebook entry: the keys that activate it and the content it adds to the prompt."""

    keys: tuple[str, ...]
    content: str
    secondary_keys: tuple[str, ...] = ()
    # With secondary keys, whether they filter activation, and how (see SELECTIVE_LOGICS).
    selective: bool = False
    selective_logic: str = "and_any"
    insertion_order: int = 100  # lower comes earlier in the prompt; higher wins the token budget
    constant: bool = False  # always active while enabled
    enabled: bool = True
    case_sensitive: bool | None = None  # None: the application default, case-insensitive here
    match_whole_words: bool | None = None  # None: the application default, whole words here
    use_regex: bool = False  # kept for round trips; matching follows SillyTavern's /pattern/flags keys
    position: str = "before_char"  # see POSITIONS
    priority: int | None = None
    name: str | None = None
    comment: str = ""  # the author's label for the entry, never prompt text
    id: int | str | None = None
    probability: int = 100  # percent chance to activate when matched, if use_probability
    use_probability: bool = True
    exclude_recursion: bool = False  # cannot be activated by another entry's content
    prevent_recursion: bool = False  # its content does not activate other entries
    extensions: dict[str, Any] = field(default_factory=dict)
    unknown: dict[str, Any] = field(default_factory=dict)  # entry fields no spec defines, kept verbatim

    def __post_init__(self) -> None:
        store_as_tuples(self, "keys", "secondary_keys")
        if self.selective_logic not in SELECTIVE_LOGICS:
            raise ValueError(f"selective_logic must be one of {SELECTIVE_LOGICS}, not {self.selective_logic!r}")
        if self.position not in POSITIONS:
            raise ValueError(f"position must be one of {POSITIONS}, not {self.position!r}")


@dataclass(frozen=True)
class Lorebook:
    """A set of lore entries with the scanning settings that decide which of them reach the prompt."""

    entries: tuple[LoreEntry, ...] = ()
    name: str | None = None
    description: str | None = None
    scan_depth: int | None = None  # how many recent messages are scanned for keys
    token_budget: int | None = None
    recursive_scanning: bool | None = None  # None: the application default, on here as in SillyTavern
    extensions: dict[str, Any] = field(default_factory=dict)
    unknown: dict[str, Any] = field(default_factory=dict)  # book fields no spec defines, kept verbatim

    def __post_init__(self) -> None:
        store_as_tuples(self, "entries")


# character_book <-> LoreEntry

_CHARACTER_BOOK_FIELDS = ("name", "description", "scan_depth", "token_budget", "recursive_scanning", "extensions")
_CHARACTER_BOOK_ENTRY_FIELDS = (
    "keys",
    "secondary_keys",
    "content",
    "comment",
    "name",
    "id",
    "enabled",
    "constant",
    "selective",
    "insertion_order",
    "priority",
    "position",
    "case_sensitive",
    "use_regex",
    "extensions",
)
# SillyTavern's settings inside a character_book entry's extensions that LoreEntry holds as fields.
_LIFTED_EXTENSIONS = (
    "position",
    "selectiveLogic",
    "case_sensitive",
    "match_whole_words",
    "probability",
    "useProbability",
    "exclude_recursion",
    "prevent_recursion",
)


def lorebook_from_character_book(book: dict[str, Any]) -> Lorebook:
    """Read the `character_book` object of a Character Card V2 or V3."""
    return read_character_book(JsonObject(book, format_name="character-book", where=""))


def read_character_book(book: JsonObject) -> Lorebook:
    """Read a `character_book` object wherever it sits (in a card, in a lorebook_v3 file)."""
    if not book.has("entries"):
        raise book.error("entries", "is missing: a lorebook must have a list of entries")
    return Lorebook(
        entries=tuple(_read_character_book_entry(entry) for entry in book.children("entries", limit=MAX_LORE_ENTRIES)),
        name=book.optional_text("name"),
        description=book.optional_text("description"),
        scan_depth=_optional_non_negative(book, "scan_depth"),
        token_budget=_optional_non_negative(book, "token_budget"),
        recursive_scanning=book.optional_flag("recursive_scanning"),
        extensions=book.mapping("extensions"),
        unknown=book.rest(("entries", *_CHARACTER_BOOK_FIELDS)),
    )


def _read_character_book_entry(entry: JsonObject) -> LoreEntry:
    extensions = JsonObject(entry.mapping("extensions"), format_name=entry.format_name, where=entry.path("extensions"))
    case_sensitive = entry.optional_flag("case_sensitive")
    if case_sensitive is None:
        case_sensitive = extensions.optional_flag("case_sensitive")
    return LoreEntry(
        keys=entry.texts("keys"),
        content=entry.text("content"),
        secondary_keys=entry.texts("secondary_keys"),
        selective=entry.flag("selective", default=False),
        selective_logic=_selective_logic(extensions, "selectiveLogic"),
        insertion_order=entry.integer("insertion_order", default=100),
        constant=entry.flag("constant", default=False),
        enabled=entry.flag("enabled", default=True),
        case_sensitive=case_sensitive,
        match_whole_words=extensions.optional_flag("match_whole_words"),
        use_regex=entry.flag("use_regex", default=False),
        position=_character_book_position(entry, extensions),
        priority=entry.optional_integer("priority"),
        name=entry.optional_text("name"),
        comment=entry.text("comment"),
        id=_entry_id(entry, "id"),
        probability=_probability(extensions, "probability"),
        use_probability=extensions.flag("useProbability", default=True),
        exclude_recursion=extensions.flag("exclude_recursion", default=False),
        prevent_recursion=extensions.flag("prevent_recursion", default=False),
        extensions=extensions.rest(_LIFTED_EXTENSIONS),
        unknown=entry.rest(_CHARACTER_BOOK_ENTRY_FIELDS),
    )


def _character_book_position(entry: JsonObject, extensions: JsonObject) -> str:
    # SillyTavern's exact position (one of eight) lives in extensions; the spec's field has only two values.
    if extensions.has("position"):
        return _position_from_number(extensions, "position")
    position = entry.text("position")
    if position == "":
        return "before_char"
    if position not in ("before_char", "after_char"):
        raise entry.error("position", f"must be 'before_char' or 'after_char', not {position!r}")
    return position


def lorebook_to_character_book(book: Lorebook) -> dict[str, Any]:
    """The `character_book` object for a Character Card V2 or V3 (JSON-ready)."""
    result: dict[str, Any] = {}
    for name in ("name", "description", "scan_depth", "token_budget", "recursive_scanning"):
        value = getattr(book, name)
        if value is not None:
            result[name] = value
    result["extensions"] = book.extensions
    result["entries"] = [_character_book_entry(entry) for entry in book.entries]
    return _with_unknown(result, book.unknown)


def _character_book_entry(entry: LoreEntry) -> dict[str, Any]:
    extensions = {
        **entry.extensions,
        "position": POSITIONS.index(entry.position),
        "selectiveLogic": SELECTIVE_LOGICS.index(entry.selective_logic),
        "probability": entry.probability,
        "useProbability": entry.use_probability,
        "exclude_recursion": entry.exclude_recursion,
        "prevent_recursion": entry.prevent_recursion,
        # SillyTavern writes these two even when unset (null: its global setting decides).
        "match_whole_words": entry.match_whole_words,
        "case_sensitive": entry.case_sensitive,
    }
    result: dict[str, Any] = {}
    if entry.id is not None:
        result["id"] = entry.id
    result |= {
        "keys": list(entry.keys),
        "secondary_keys": list(entry.secondary_keys),
        "comment": entry.comment,
        "content": entry.content,
        "constant": entry.constant,
        "selective": entry.selective,
        "insertion_order": entry.insertion_order,
        "enabled": entry.enabled,
        "position": "before_char" if entry.position == "before_char" else "after_char",
        "use_regex": entry.use_regex,
    }
    if entry.case_sensitive is not None:
        result["case_sensitive"] = entry.case_sensitive  # the spec reads this one, SillyTavern its extension
    if entry.priority is not None:
        result["priority"] = entry.priority
    if entry.name is not None:
        result["name"] = entry.name
    result["extensions"] = extensions
    return _with_unknown(result, entry.unknown)


# lorebook_v3

LOREBOOK_V3_SPEC = "lorebook_v3"


def lorebook_from_v3(data: bytes | str) -> Lorebook:
    """Read a CCv3 stand-alone lorebook file: `{"spec": "lorebook_v3", "data": {...}}`."""
    document = JsonObject(load_json(data, "lorebook-v3"), format_name="lorebook-v3", where="")
    spec = document.optional_text("spec")
    if spec != LOREBOOK_V3_SPEC:
        raise document.error("spec", f"must be {LOREBOOK_V3_SPEC!r}, not {spec!r}")
    return read_character_book(document.child("data"))


def lorebook_to_v3(book: Lorebook) -> bytes:
    """A CCv3 stand-alone lorebook file, UTF-8 JSON."""
    document = {"spec": LOREBOOK_V3_SPEC, "data": lorebook_to_character_book(book)}
    return dump_json(document, pretty=True).encode("utf-8")


# SillyTavern World Info

_WORLD_INFO_FIELDS = (
    "uid",
    "key",
    "keysecondary",
    "content",
    "comment",
    "name",
    "disable",
    "constant",
    "selective",
    "selectiveLogic",
    "order",
    "priority",
    "position",
    "caseSensitive",
    "matchWholeWords",
    "use_regex",
    "probability",
    "useProbability",
    "excludeRecursion",
    "preventRecursion",
)
# World Info entry settings without a LoreEntry field, renamed to the extension names SillyTavern gives them
# when it writes a character_book, so a book converted either way keeps them where SillyTavern looks.
_WORLD_INFO_EXTENSION_NAMES = {
    "depth": "depth",
    "displayIndex": "display_index",
    "group": "group",
    "groupOverride": "group_override",
    "groupWeight": "group_weight",
    "useGroupScoring": "use_group_scoring",
    "scanDepth": "scan_depth",
    "automationId": "automation_id",
    "role": "role",
    "vectorized": "vectorized",
    "sticky": "sticky",
    "cooldown": "cooldown",
    "delay": "delay",
    "delayUntilRecursion": "delay_until_recursion",
}
_EXTENSION_WORLD_INFO_NAMES = {extension: key for key, extension in _WORLD_INFO_EXTENSION_NAMES.items()}


def lorebook_from_world_info(data: bytes | str, *, name: str | None = None) -> Lorebook:
    """Read a SillyTavern World Info file; `name` is the book's name, which SillyTavern takes from the file name."""
    document = JsonObject(load_json(data, "world-info"), format_name="world-info", where="")
    entries = document.optional_mapping("entries")
    if entries is None:
        raise document.error("entries", "is missing: World Info must have an object of entries keyed by uid")
    if len(entries) > MAX_LORE_ENTRIES:
        raise document.error("entries", f"has {len(entries)} entries, over the limit of {MAX_LORE_ENTRIES}")
    read = [
        _read_world_info_entry(JsonObject(value, format_name="world-info", where=f"entries.{key}"), key)
        for key, value in entries.items()
    ]
    return Lorebook(entries=tuple(read), name=name)


def _read_world_info_entry(entry: JsonObject, key_in_entries: str) -> LoreEntry:
    extensions: dict[str, Any] = {}
    for key, value in entry.rest(_WORLD_INFO_FIELDS).items():
        extensions[_WORLD_INFO_EXTENSION_NAMES.get(key, key)] = value
    uid = _entry_id(entry, "uid")
    if uid is None and key_in_entries.isdigit():
        uid = int(key_in_entries)
    return LoreEntry(
        keys=entry.texts("key"),
        content=entry.text("content"),
        secondary_keys=entry.texts("keysecondary"),
        # SillyTavern's template for a new World Info entry is selective; a card entry's default is not.
        selective=entry.flag("selective", default=True),
        selective_logic=_selective_logic(entry, "selectiveLogic"),
        insertion_order=entry.integer("order", default=100),
        constant=entry.flag("constant", default=False),
        enabled=not entry.flag("disable", default=False),
        case_sensitive=entry.optional_flag("caseSensitive"),
        match_whole_words=entry.optional_flag("matchWholeWords"),
        use_regex=entry.flag("use_regex", default=False),
        position=_position_from_number(entry, "position"),
        priority=entry.optional_integer("priority"),
        name=entry.optional_text("name"),
        comment=entry.text("comment"),
        id=uid,
        probability=_probability(entry, "probability"),
        use_probability=entry.flag("useProbability", default=True),
        exclude_recursion=entry.flag("excludeRecursion", default=False),
        prevent_recursion=entry.flag("preventRecursion", default=False),
        extensions=extensions,
    )


def lorebook_to_world_info(book: Lorebook) -> bytes:
    """A SillyTavern World Info file, UTF-8 JSON. The book's own settings have no place there (see above)."""
    entries: dict[str, Any] = {}
    used_uids = {entry.id for entry in book.entries if isinstance(entry.id, int)}
    next_free = 0
    for entry in book.entries:
        uid = entry.id
        # World Info needs unique integer uids; entries from a card may have string ids, repeats or none.
        if not isinstance(uid, int) or str(uid) in entries:
            while next_free in used_uids:
                next_free += 1
            uid = next_free
            used_uids.add(uid)
        entries[str(uid)] = _world_info_entry(entry, uid)
    return dump_json({"entries": entries}, pretty=True).encode("utf-8")


def _world_info_entry(entry: LoreEntry, uid: int) -> dict[str, Any]:
    result: dict[str, Any] = {
        "uid": uid,
        "key": list(entry.keys),
        "keysecondary": list(entry.secondary_keys),
        "comment": entry.comment,
        "content": entry.content,
        "constant": entry.constant,
        "selective": entry.selective,
        "selectiveLogic": SELECTIVE_LOGICS.index(entry.selective_logic),
        "order": entry.insertion_order,
        "position": POSITIONS.index(entry.position),
        "disable": not entry.enabled,
        "caseSensitive": entry.case_sensitive,
        "matchWholeWords": entry.match_whole_words,
        "probability": entry.probability,
        "useProbability": entry.use_probability,
        "excludeRecursion": entry.exclude_recursion,
        "preventRecursion": entry.prevent_recursion,
    }
    # Fields World Info lacks, written under our names only when set, so converting a card book keeps them.
    if entry.name is not None:
        result["name"] = entry.name
    if entry.priority is not None:
        result["priority"] = entry.priority
    if entry.use_regex:
        result["use_regex"] = True
    extensions = {_EXTENSION_WORLD_INFO_NAMES.get(key, key): value for key, value in entry.extensions.items()}
    return _with_unknown(_with_unknown(result, extensions), entry.unknown)


# Shared readers


def detect_lorebook(data: bytes | str) -> str:
    """Which lorebook file this is: "world-info" or "lorebook-v3"; FormatError for anything else."""
    document = load_json(data, "lorebook")
    return lorebook_kind(document)


def lorebook_kind(document: Any) -> str:
    """The lorebook shape of parsed JSON: "world-info", "lorebook-v3", or FormatError."""
    if isinstance(document, dict):
        if document.get("spec") == LOREBOOK_V3_SPEC:
            return "lorebook-v3"
        entries = document.get("entries")
        if isinstance(entries, dict) and all(isinstance(entry, dict) for entry in entries.values()):
            return "world-info"
    raise FormatError(
        "lorebook", "", 'neither SillyTavern World Info ({"entries": {...}}) nor a lorebook_v3 file ({"spec": ...})'
    )


def _entry_id(entry: JsonObject, key: str) -> int | str | None:
    value = entry.value.get(key)
    if value is None or isinstance(value, str):
        return value
    return entry.optional_integer(key)


def _optional_non_negative(book: JsonObject, key: str) -> int | None:
    value = book.optional_integer(key)
    if value is not None and value < 0:
        raise book.error(key, "must not be negative")
    return value


def _selective_logic(source: JsonObject, key: str) -> str:
    number = source.integer(key, default=0)
    if not 0 <= number < len(SELECTIVE_LOGICS):
        raise source.error(key, f"must be 0 to {len(SELECTIVE_LOGICS) - 1} (AND ANY, NOT ALL, NOT ANY, AND ALL)")
    return SELECTIVE_LOGICS[number]


def _position_from_number(source: JsonObject, key: str) -> str:
    number = source.integer(key, default=0)
    if not 0 <= number < len(POSITIONS):
        raise source.error(key, f"must be a SillyTavern position 0 to {len(POSITIONS) - 1}, not {number}")
    return POSITIONS[number]


def _probability(source: JsonObject, key: str) -> int:
    number = source.integer(key, default=100)
    if not 0 <= number <= 100:
        raise source.error(key, "must be a percentage from 0 to 100")
    return number


def _with_unknown(known: dict[str, Any], unknown: dict[str, Any]) -> dict[str, Any]:
    """`known` followed by the unknown fields; a defined field always wins over an unknown one of that name."""
    return known | {key: value for key, value in unknown.items() if key not in known}
