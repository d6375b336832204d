"""Twine stories in Twee 3, the text form of a Twine 2 story.

Follows the Twee 3 specification (iftechfoundation/twine-specs, twee-3-specification.md) and, where it
leaves things open, what Twine 2 itself does (twinejs src/util/twee.ts and parse-links.ts):

- A passage starts at a header line `:: Name [tag another] {"position":"600,400","size":"100,100"}`; in names
  and tags `[ ] { }` and backslash are escaped with a backslash, and a name's leading or trailing space too.
- Its text runs to the next header; leading blank lines and trailing whitespace are dropped, and a text
  line starting with `::` is written `\\::` (Twine 2 escapes it the same way).
- `StoryTitle` holds the title; `StoryData` holds JSON: ifid, format, format-version, start, tag-colors, zoom.
  The start passage is `start`, or the passage called `Start` when StoryData names none.
- Links: `[[target]]`, `[[text->target]]` (the rightmost `->` divides), `[[target<-text]]` (the leftmost
  `<-`), `[[text|target]]` (the last `|`); a SugarCube setter `[[...][$x to 1]]` is ignored, as are links to
  URLs. Passages tagged `script` or `stylesheet` hold code, not links.

Stricter than Twine, because an imported story becomes a graph of beats: every link must reach a passage,
the start passage must exist, and names must be unique. Invalid passage metadata is dropped, as the
specification recommends; invalid StoryData is an error, because the story's identity and start live there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from worlds.formats.errors import FormatError
from worlds.formats.json_input import JsonObject, decode_utf8, dump_json, load_json
from worlds.formats.limits import MAX_PASSAGES, MAX_TWEE_BYTES, check_size
from worlds.formats.records import store_as_tuples

TITLE_PASSAGE = "StoryTitle"
DATA_PASSAGE = "StoryData"
DEFAULT_START = "Start"
CODE_TAGS = ("script", "stylesheet")
_HEADER_SPECIALS = "\\[]{}"
_LINK_MARKUP = re.compile(r"\[\[.*?\]\]")
_EXTERNAL_LINK = re.compile(r"^\w+:///?\w", re.IGNORECASE)  # Twine 2 parse-links internalLinks
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")
_STORY_DATA_FIELDS = ("ifid", "format", "format-version", "start", "tag-colors", "zoom")


def _normalise_text(text: str) -> str:
    """Passage text as a Twee file can hold it: Unix line ends, no leading blank lines, no trailing space."""
    return _LEADING_BLANK_LINES.sub("", text.replace("\r\n", "\n")).rstrip()


@dataclass(frozen=True)
class TwinePassage:
    """One passage: its name, tags, text and Twine's layout metadata (position and size)."""

    name: str
    text: str = ""
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        store_as_tuples(self, "tags")
        object.__setattr__(self, "text", _normalise_text(self.text))

    @property
    def links(self) -> tuple[tuple[str, str], ...]:
        """The (text, target) of each link to a passage, in the order they appear."""
        if any(tag in CODE_TAGS for tag in self.tags):
            return ()
        found = (_parse_link(markup[2:-2]) for markup in _LINK_MARKUP.findall(self.text))
        return tuple(link for link in found if link is not None)


@dataclass(frozen=True)
class TwineStory:
    """A Twine story: its StoryTitle, its StoryData fields and its passages (without those two)."""

    title: str
    passages: tuple[TwinePassage, ...]
    ifid: str | None = None
    story_format: str | None = None  # StoryData "format", e.g. "Harlowe"
    story_format_version: str | None = None  # StoryData "format-version"
    start: str | None = None  # None: the passage called "Start"
    tag_colors: dict[str, str] = field(default_factory=dict)
    zoom: float | None = None
    story_data_extra: dict[str, Any] = field(default_factory=dict)  # StoryData fields the spec doesn't define

    def __post_init__(self) -> None:
        store_as_tuples(self, "passages")
        object.__setattr__(self, "title", _normalise_text(self.title))

    @property
    def start_passage(self) -> str:
        return self.start or DEFAULT_START

    def passage(self, name: str) -> TwinePassage | None:
        return next((passage for passage in self.passages if passage.name == name), None)


def twee_link(text: str, target: str) -> str:
    """Link markup that reads back as (text, target): `[[target]]` when they are equal, else the first of
    `[[text->target]]`, `[[target<-text]]`, `[[text|target]]` that is not ambiguous."""
    forms = [f"[[{target}]]"] if text == target else []
    forms += [f"[[{text}->{target}]]", f"[[{target}<-{text}]]", f"[[{text}|{target}]]"]
    for markup in forms:
        if _LINK_MARKUP.findall(markup) == [markup] and _parse_link(markup[2:-2]) == (text, target):
            return markup
    raise ValueError(f"no Twee link markup can hold the text {text!r} and the target {target!r}")


def _parse_link(inner: str) -> tuple[str, str] | None:
    """(text, target) of the inside of `[[...]]`, as Twine 2's parse-links.ts reads it; None for no link."""
    inner = inner.split("][", 1)[0]
    # Each form applies only when it gives a non-empty target, as Twine's `||` chain does.
    if "->" in inner:
        text, _, target = inner.rpartition("->")
        if target:
            return _internal(text, target)
    if "<-" in inner:
        target, _, text = inner.partition("<-")
        if target:
            return _internal(text, target)
    if "|" in inner:
        text, _, target = inner.rpartition("|")
        if target:
            return _internal(text, target)
    return _internal(inner, inner) if inner else None


def _internal(text: str, target: str) -> tuple[str, str] | None:
    return None if _EXTERNAL_LINK.match(target) else (text, target)


# Parsing


def twee_parse(source: str | bytes) -> TwineStory:
    """Read a Twee 3 file; FormatError names the line or passage at fault."""
    check_size(source, MAX_TWEE_BYTES, "twee")
    lines = decode_utf8(source, "twee").replace("\r\n", "\n").split("\n")
    sections: list[tuple[int, str, list[str]]] = []  # header line number, header, text lines
    for number, line in enumerate(lines, start=1):
        if line.startswith("::"):
            if len(sections) > MAX_PASSAGES:
                raise FormatError("twee", f"line {number}", f"more than {MAX_PASSAGES} passages")
            sections.append((number, line, []))
        elif sections:
            sections[-1][2].append(_unescape_text_line(line))
        elif line.strip():
            raise FormatError("twee", f"line {number}", "text before the first passage header (a line starting '::')")
    if not sections:
        raise FormatError("twee", "", "no passages: each passage starts with a line '::Name'")

    title = ""
    story_data: dict[str, Any] = {}
    passages: list[TwinePassage] = []
    seen: set[str] = set()
    for number, header, text_lines in sections:
        name, tags, metadata = _read_header(header, f"line {number}")
        if name in seen:
            raise FormatError("twee", f"passage {name!r}", f"is defined twice (again at line {number})")
        seen.add(name)
        text = "\n".join(text_lines)
        if name == TITLE_PASSAGE:
            title = text
        elif name == DATA_PASSAGE:
            story_data = load_json(text, "twee", where=f"passage {DATA_PASSAGE!r}", first_line=number + 1)
        else:
            passages.append(TwinePassage(name=name, text=text, tags=tags, metadata=metadata))
    story = _story_with_data(title, passages, story_data)
    _validate(story)
    return story


def _story_with_data(title: str, passages: list[TwinePassage], story_data: Any) -> TwineStory:
    data = JsonObject(story_data, format_name="twee", where=f"passage {DATA_PASSAGE!r}")
    tag_colors = data.mapping("tag-colors")
    colors = JsonObject(tag_colors, format_name="twee", where=data.path("tag-colors"))
    for tag in tag_colors:
        colors.text(tag)
    return TwineStory(
        title=title,
        passages=tuple(passages),
        ifid=data.optional_text("ifid"),
        story_format=data.optional_text("format"),
        story_format_version=data.optional_text("format-version"),
        start=data.optional_text("start"),
        tag_colors=tag_colors,
        zoom=data.optional_number("zoom"),
        story_data_extra=data.rest(_STORY_DATA_FIELDS),
    )


def _read_header(line: str, where: str) -> tuple[str, tuple[str, ...], dict[str, Any]]:
    header = line[2:]
    name_characters, position = _read_escaped(header, 0, stop="[{")
    name = "".join(character for character, _ in _strip_unescaped_space(name_characters))
    if not name:
        raise FormatError("twee", where, "passage header has no name")

    tags: tuple[str, ...] = ()
    if header.startswith("[", position):
        tag_characters, position = _read_escaped(header, position + 1, stop="]")
        if position >= len(header):
            raise FormatError("twee", where, f"the tags of passage {name!r} have no closing ']'")
        tags = _split_tags(tag_characters)
        position += 1

    metadata: dict[str, Any] = {}
    rest = header[position:].strip()
    if rest.startswith("{"):
        try:
            decoded = json.loads(rest)
        except (ValueError, RecursionError):
            decoded = None
        # The specification asks to drop metadata that does not decode and carry on.
        metadata = decoded if isinstance(decoded, dict) else {}
    elif rest:
        raise FormatError("twee", where, f"unexpected {rest!r} after the name and tags of passage {name!r}")
    return name, tags, metadata


def _read_escaped(header: str, position: int, stop: str) -> tuple[list[tuple[str, bool]], int]:
    """(character, was escaped) pairs up to the first unescaped character in `stop`, and where that is."""
    characters: list[tuple[str, bool]] = []
    while position < len(header) and header[position] not in stop:
        if header[position] == "\\" and position + 1 < len(header):
            characters.append((header[position + 1], True))
            position += 2
        else:
            characters.append((header[position], False))
            position += 1
    return characters, position


def _strip_unescaped_space(characters: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    start, end = 0, len(characters)
    while start < end and not characters[start][1] and characters[start][0].isspace():
        start += 1
    while end > start and not characters[end - 1][1] and characters[end - 1][0].isspace():
        end -= 1
    return characters[start:end]


def _split_tags(characters: list[tuple[str, bool]]) -> tuple[str, ...]:
    tags: list[str] = []
    current = ""
    for character, escaped in characters:
        if character.isspace() and not escaped:
            if current:
                tags.append(current)
            current = ""
        else:
            current += character
    if current:
        tags.append(current)
    return tuple(tags)


def _unescape_text_line(line: str) -> str:
    # Writing adds one backslash before any run of backslashes followed by "::" at a line's start.
    return line[1:] if re.match(r"\\+::", line) else line


def _escape_text(text: str) -> str:
    return "\n".join("\\" + line if re.match(r"\\*::", line) else line for line in text.split("\n"))


# Validation, shared by reading and writing so we never write a file we would refuse to read


def _validate(story: TwineStory) -> None:
    if len(story.passages) > MAX_PASSAGES:
        raise FormatError("twee", "", f"{len(story.passages)} passages, over the limit of {MAX_PASSAGES}")
    names: set[str] = set()
    for passage in story.passages:
        where = f"passage {passage.name!r}"
        if not passage.name.strip() or "\n" in passage.name or "\r" in passage.name:
            raise FormatError("twee", where, "a passage name must be one non-blank line")
        if passage.name in (TITLE_PASSAGE, DATA_PASSAGE):
            raise FormatError("twee", where, "is a special passage and holds no story text")
        if passage.name in names:
            raise FormatError("twee", where, "is defined twice")
        for tag in passage.tags:
            if not tag or any(character.isspace() for character in tag):
                raise FormatError("twee", where, f"tag {tag!r} must be non-empty and contain no spaces")
        names.add(passage.name)
    for passage in story.passages:
        for _, target in passage.links:
            if target not in names:
                raise FormatError("twee", f"passage {passage.name!r}", f"links to {target!r}, which is no passage")
    if story.start_passage not in names:
        if story.start is None:
            raise FormatError(
                "twee", DATA_PASSAGE, f"names no start passage, and there is no passage called {DEFAULT_START!r}"
            )
        raise FormatError("twee", f"{DATA_PASSAGE}.start", f"the start passage {story.start!r} does not exist")


# Writing


def twee_serialise(story: TwineStory) -> str:
    """The story as a Twee 3 file, laid out as Twine 2 exports it; reading it back gives an equal story."""
    _validate(story)
    story_data: dict[str, Any] = {
        "ifid": story.ifid,
        "format": story.story_format,
        "format-version": story.story_format_version,
        "start": story.start,
        "tag-colors": story.tag_colors or None,
        "zoom": story.zoom,
    }
    story_data = {key: value for key, value in story_data.items() if value is not None}
    story_data |= {key: value for key, value in story.story_data_extra.items() if key not in story_data}
    parts = [
        f":: {TITLE_PASSAGE}\n{_escape_text(story.title)}",
        f":: {DATA_PASSAGE}\n{dump_json(story_data, pretty=True)}",
    ]
    parts += [f"{_passage_header(passage)}\n{_escape_text(passage.text)}" for passage in story.passages]
    return "\n\n\n".join(parts) + "\n"


def _passage_header(passage: TwinePassage) -> str:
    header = ":: " + _escape_name(passage.name)
    if passage.tags:
        header += " [" + " ".join(_escape_header(tag) for tag in passage.tags) + "]"
    if passage.metadata:
        header += " " + dump_json(passage.metadata, pretty=False)
    return header


def _escape_header(value: str) -> str:
    return "".join("\\" + character if character in _HEADER_SPECIALS else character for character in value)


def _escape_name(name: str) -> str:
    escaped = _escape_header(name)
    # Reading strips unescaped space around a name, so a name's own leading or trailing space is escaped.
    body = escaped.strip()
    if body == escaped:
        return escaped
    leading = escaped[: len(escaped) - len(escaped.lstrip())]
    trailing = escaped[len(escaped.rstrip()) :]
    return "".join("\\" + c for c in leading) + body + "".join("\\" + c for c in trailing)
