"""Checks a character's reply passes before a player sees it, and the creator's lines that replace one that
keeps failing.

A 135M model cannot hold a persona unguarded: it drifts into other scripts, into the register of the web
text it was trained on (blogs, articles, software), into an assistant's voice ("You're right", "As an AI"),
and into repeating its last reply. Each of these is cheap to see in the text, so the narrator checks every
sentence before it is shown, resamples a reply whose first sentence fails, and when the resamples fail too
says a line the creator wrote (the greeting, the example dialogue) instead of showing the failure.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# The web's and the assistant's vocabulary: words a character of a story world does not use unless the
# world itself speaks of them (checked against the world's own texts).
OFF_WORLD_WORDS = {
    "ai", "algorithm", "app", "apps", "article", "articles", "assistant", "audio", "blog", "blogger", "blogs",
    "browser", "chatbot", "computer", "computers", "database", "dichotomy", "digital", "download", "email",
    "essay", "facebook", "fallacy", "google", "hashtag", "instagram", "internet", "laptop", "linkedin", "login",
    "newsletter", "online", "paragraph", "password", "podcast", "programming", "reddit", "roleplay",
    "smartphone", "software", "subscribe", "tiktok", "tweet", "twitter", "upload", "url", "user", "users",
    "video", "videos", "website", "websites", "wifi", "wikipedia", "workstation", "youtube", "movie", "movies",
    "film", "films", "fictional", "tv", "television", "celebrity", "episode", "album", "universe", "planet",
    "game", "games", "tournament", "player", "players",
}  # fmt: skip
ASSISTANT_OPENINGS = re.compile(
    r"^\s*(you'?re right|you are right|you are correct|that'?s right|as an ai|as a language model|i'?m an ai|"
    r"i am an ai|i'?m sorry,? but|certainly|sure[,!]|of course[,!]|great question|good question|"
    r"i'?m just a|i am just a|i cannot|i can'?t help|hello there|how can i (help|assist)|"
    r"(that'?s|it'?s|what) an? (great|good|wonderful|funny|interesting|fair|nice|lovely) (question|one|story|idea)|"
    r"i'?m (so )?glad you (asked|found|enjoyed|liked))",
    re.I,
)
NOT_PROSE = re.compile(r"\{\{|\}\}|<START>|https?://|www\.|^\s*[#*-]\s|\b(user|assistant|system)\s*:", re.I | re.M)
WORD = re.compile(r"[A-Za-z']+")
# Capitalised words any speaker of English may use without the world naming them first.
EVERYDAY_CAPITALISED = {
    "i", "i'm", "i've", "i'd", "i'll", "god", "gods", "sir", "madam", "miss", "mister", "mr", "mrs", "ma'am", "lord",
    "lady", "aye", "nay", "oh", "ah", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "christmas", "english",
}  # fmt: skip
# A sentence that ends on one of these stopped before its point ("I'm.", "You'll find it on the.").
DANGLING_ENDINGS = {
    "i'm", "you're", "it's", "i", "the", "a", "an", "to", "of", "and", "or", "but", "my", "your", "with", "because",
    "if", "than", "as",
}  # fmt: skip


# "I am the sea", "I'm the kettle still warm", "I am a name": a small model says the character is whatever the
# player just named. A character is what its creator says it is; a claim to be something else is refused.
IDENTITY_CLAIM = re.compile(r"\b(?:i am|i'm|i was|i'll be|i will be)\s+(?:the|a|an)\s+([a-z' -]+)", re.I)
# Where the thing claimed ends: "the light of your day" claims to be a light.
CLAIM_ENDS = {
    "of", "in", "who", "that", "which", "with", "for", "and", "to", "on", "at", "from", "but", "so", "than", "as",
    "here", "there", "now", "again", "too", "around", "round", "about", "by",
}  # fmt: skip
# Words in a claim that say nothing about what the speaker is ("the one who waits", "a bit tired", "a friend").
PLAIN_SELVES = {
    "one", "bit", "little", "lot", "friend", "fool", "woman", "man", "lady", "person", "soul", "sort", "kind",
    "stranger", "guest", "host", "creature", "body", "only", "same", "old", "young",
}  # fmt: skip


# A sentence that tells the player something of themselves ("The inn you came from is a small cottage."), and
# one that says the character does not know it ("You never told me that.", "I can't recall your sister's name").
ABOUT_THE_LISTENER = re.compile(r"\b(?:you|your|yours|you're|you've|you'd|you'll|yourself)\b", re.I)
NOT_KNOWING = re.compile(
    r"\b(?:never|not|didn't|haven't|hasn't|don't|doesn't|can't|cannot|couldn't|won't|no idea|forgot|forgotten|"
    r"forget|remember|recall|unsure|perhaps|maybe|might)\b|\?\s*$",
    re.I,
)
# Words that say nothing of what the player is or did: what every such sentence is made of.
PLAIN_WORDS = {
    "you", "your", "yours", "you're", "you've", "you'd", "you'll", "yourself", "the", "a", "an", "and", "or", "but",
    "is", "are", "was", "were", "be", "been", "have", "has", "had", "do", "does", "did", "to", "of", "in", "on",
    "at", "from", "with", "for", "by", "it", "its", "it's", "that", "this", "there", "here", "what", "which", "who",
    "i", "me", "my", "we", "us", "our", "so", "as", "very", "just", "still", "now", "then", "one", "all", "some",
    "said", "say", "told", "tell", "came", "come", "went", "go", "got", "get", "called", "name", "named", "over",
    "back", "up", "down", "out", "into", "off", "across", "about", "away", "round", "around", "through", "again",
}  # fmt: skip


@dataclass(frozen=True)
class ReplyCheckConfig:
    """When a reply repeats the last one."""

    # Share of a sentence's words (as a set) found in one sentence of the previous reply.
    max_overlap_with_last_reply: float = 0.7
    # Shorter sentences repeat only when every word of theirs was in one sentence of the last reply.
    min_words_for_repetition: int = 4
    # Longest word a character says; longer ones are glued nonsense ("thelighthousekeeperofthe").
    max_word_length: int = 20


@dataclass(frozen=True)
class ReplyContext:
    """What a sentence of a reply is checked against."""

    world_words: frozenset[str]  # lower-case words of the world's and the character's own texts
    last_reply: str = ""
    player_name: str = ""
    player_line: str = ""  # what the player just said, which a reply must not say back as its own
    # Lower-case words of everything the model was given (the world, the persona, lore, memories, the talk so
    # far): a name outside them is one the model brought from its training text. None leaves names unchecked.
    known_words: frozenset[str] | None = None
    character_name: str = ""  # who speaks: a line that opens by calling them by name speaks to the wrong one
    earlier_replies: Sequence[str] = ()  # the character's replies before the last, which it must not say again
    # identity_stems_of the character's name, persona and personality; None leaves claims unchecked.
    identity: frozenset[str] | None = None
    # When the player asked about themselves and nothing recalled answers it: the stems of what the player's
    # recalled memories and this line say, the only things of theirs the character may state. None leaves such
    # claims unchecked.
    player_told: frozenset[str] | None = None
    # What of the player's that question names ("dog" in "what's my dog called?"), stemmed as the recollection
    # stems: a statement about the player that names none of it answers something else ("You're Fennimore.").
    player_things_asked: frozenset[str] = frozenset()


def sentences_of(text: str) -> list[str]:
    """The sentences of a reply, split where one ends and another begins."""
    return [sentence.strip() for sentence in re.split(r"(?<=[.!?…])\s+", text) if sentence.strip()]


def words_of(text: str) -> list[str]:
    return [word.lower() for word in WORD.findall(text)]


def world_words_of(texts: Sequence[str]) -> frozenset[str]:
    return frozenset(word for text in texts for word in words_of(text))


def identity_stems_of(texts: Sequence[str]) -> frozenset[str]:
    """What a character may say it is: the stems of the words its creator described it with."""
    return frozenset(stem(word) for text in texts for word in words_of(text))


def stem(word: str) -> str:
    """Enough of a word to match its forms ("listens", "listener") and not a longer word it begins
    ("light", "lighthouse")."""
    return word[:6]


def claimed_identity(sentence: str, identity: frozenset[str]) -> str | None:
    """What the sentence says the speaker is, when nothing its creator wrote says so; None otherwise."""
    for claim in IDENTITY_CLAIM.finditer(sentence):
        claimed: list[str] = []
        for word in words_of(claim.group(1)):
            if word in CLAIM_ENDS:
                break
            claimed.append(word)
        if claimed and not any(word in PLAIN_SELVES or stem(word) in identity for word in claimed):
            return " ".join(claimed)
    return None


def foreign_script(text: str) -> bool:
    """Whether any letter in `text` is not Latin (accented Latin letters are Latin)."""
    return any(character.isalpha() and not unicodedata.name(character, "").startswith("LATIN") for character in text)


def sentence_problems(sentence: str, context: ReplyContext, config: ReplyCheckConfig | None = None) -> list[str]:
    """What is wrong with one sentence of a reply, in words the creator's debug panel shows; [] if nothing."""
    config = config or ReplyCheckConfig()
    said = words_of(sentence)
    if foreign_script(sentence):
        return ["another script"]
    if not said:
        return ["no words"]
    problems = []
    off_world = sorted({word for word in said if word in OFF_WORLD_WORDS} - context.world_words)
    if off_world:
        problems.append(f"off-world words: {', '.join(off_world)}")
    if ASSISTANT_OPENINGS.search(sentence):
        problems.append("an assistant's voice")
    if NOT_PROSE.search(sentence) or (context.player_name and sentence.startswith(f"{context.player_name}:")):
        problems.append("not a line of speech")
    if context.character_name and re.match(
        rf"^\W*(?:dear|hello|hi|hey|oh)?\s*{re.escape(context.character_name)}\b\s*[,!:]", sentence, re.I
    ):
        problems.append("speaks to the character itself")
    elif context.character_name and re.match(rf"^\W*{re.escape(context.character_name)}\s+[a-z]", sentence):
        problems.append("speaks of the character as someone else")  # "Eve said she's an extra."
    if max(len(word) for word in said) > config.max_word_length:
        problems.append("a run-on word")
    if said[-1] in DANGLING_ENDINGS:
        problems.append("breaks off mid-phrase")
    if context.known_words is not None and (strangers := unknown_names(sentence, context.known_words)):
        problems.append(f"names what the world never mentions: {', '.join(strangers)}")
    if swaps_names(sentence, context.character_name, context.player_name):
        problems.append("mixes up who is who")  # "I'm Marguerite, I repair clocks." said by Eve to Marguerite
    if context.identity is not None and (claimed := claimed_identity(sentence, context.identity)):
        problems.append(f"claims to be what the character is not: {claimed}")
    if context.player_told is not None and states_of_the_listener(sentence):
        if unfounded := unfounded_about_the_player(sentence, context.player_told):
            problems.append(f"tells the player what nothing they told holds: {', '.join(unfounded)}")
        elif answers_of_another_thing(sentence, context.player_things_asked):
            asked_of = ", ".join(sorted(context.player_things_asked))
            problems.append(f"tells the player of something other than their {asked_of}")
    if repeats(sentence, context.last_reply, config):
        problems.append("repeats the last reply")
    elif any(repeats(sentence, earlier, config) for earlier in context.earlier_replies):
        problems.append("repeats an earlier reply")
    if echoes(sentence, context.player_line, config):
        problems.append("echoes the player's words")
    return problems


# A sentence that opens by calling someone by name: "Jodi, I'm glad you're here."
OPENING_VOCATIVE = re.compile(r"^\W*([A-Z][a-z']+)\s*[,!]")
# The words a sentence opens with before a comma that call nobody: "Well, …", "Honestly, …" (a closed class).
DISCOURSE_MARKERS = {
    "well", "now", "yes", "yeah", "no", "nope", "still", "look", "listen", "sure", "right", "aye", "nay", "honestly",
    "sadly", "besides", "anyway", "indeed", "however", "alas", "hmm", "mmm", "hm", "ah", "aha", "oh", "ooh", "ha",
    "hah", "huh", "eh", "so", "then", "there", "here", "please", "thanks", "sorry", "okay", "ok", "fine", "good",
    "perhaps", "maybe", "truly", "frankly", "mind", "careful", "quick", "quiet", "hush", "easy", "wait", "come",
    "go", "true", "agreed", "certainly", "naturally", "surely", "dear", "friend", "child", "lad", "lass", "love",
    "stranger", "traveller", "traveler", "visitor", "welcome", "hello", "hi", "hey", "goodbye", "bye", "evening",
    "morning", "afternoon", "night", "tonight", "today", "tomorrow", "yesterday", "first", "second", "finally",
    "also", "again", "once", "twice", "strange", "funny", "odd", "lovely", "aw", "ugh", "ahoy",
}  # fmt: skip


def unknown_names(sentence: str, known_words: frozenset[str]) -> list[str]:
    """Capitalised words after a sentence's first that nothing the model was given uses ("in Tokyo, Japan",
    "Zadie"), and a name the sentence opens by calling someone ("Jodi, I'm glad…" to a player who said she is
    Rosalind): a small model's web text showing through a character."""
    tokens = WORD.findall(sentence)
    called = OPENING_VOCATIVE.match(sentence)
    opening = [called.group(1)] if called and called.group(1).lower() not in DISCOURSE_MARKERS else []
    checked = opening + tokens[1:]
    return [
        token
        for token in checked
        if token[:1].isupper() and token.lower() not in known_words and token.lower() not in EVERYDAY_CAPITALISED
    ]


def states_of_the_listener(sentence: str) -> bool:
    """Whether the sentence states something of the player (in the second person), rather than saying the
    character does not know it ("You never told me that.") or asking."""
    return bool(ABOUT_THE_LISTENER.search(sentence)) and not NOT_KNOWING.search(sentence)


def unfounded_about_the_player(sentence: str, player_told: frozenset[str]) -> list[str]:
    """The words of a statement about the player (`states_of_the_listener`) that nothing they told holds: a
    small model asked "what was my inn called?" invents one ("The inn you came from is a small cottage."). []
    when the player told every word of it ("You came over from Penzance.")."""
    return [word for word in words_of(sentence) if word not in PLAIN_WORDS and stem(word) not in player_told]


def answers_of_another_thing(sentence: str, things_asked: frozenset[str]) -> bool:
    """Whether a statement about the player (`states_of_the_listener`) leaves out every thing of theirs the
    question named: asked "what is my dog called?", "You're Fennimore." is about them, and not about the dog."""
    return bool(things_asked) and not any(
        word.startswith(thing) for word in words_of(sentence) for thing in things_asked
    )


def repeats(sentence: str, last_reply: str, config: ReplyCheckConfig) -> bool:
    """Whether the sentence says one of the last reply's sentences again: most of its words, or, for a short
    sentence ("A story." after "A nice story."), every one of them."""
    said = set(words_of(sentence))
    if not said or not last_reply:
        return False
    share = config.max_overlap_with_last_reply if len(said) >= config.min_words_for_repetition else 1.0
    for earlier in sentences_of(last_reply):
        before = set(words_of(earlier))
        if before and len(said & before) / len(said) >= share and (len(said) > 1 or said == before):
            return True
    return False


def swaps_names(sentence: str, character_name: str, player_name: str) -> bool:
    """Whether the character gives itself the player's name or gives the player its own."""
    claims = [
        (r"i am|i'm|my name is|my name's|call me", player_name),
        (r"you are|you're|your name is|your name's", character_name),
    ]
    return any(
        name and re.search(rf"\b(?:{openings})\s+{re.escape(name)}\b", sentence, re.I) for openings, name in claims
    )


def echoes(sentence: str, player_line: str, config: ReplyCheckConfig) -> bool:
    """Whether the sentence is mostly the player's own words said back ("Do you have to climb every step?" to
    "Do you have to climb them every night?"), the way a small model mirrors a question it cannot answer."""
    said = words_of(sentence)
    heard = set(words_of(player_line))
    if len(said) < config.min_words_for_repetition or not heard:
        return False
    return sum(word in heard for word in said) / len(said) >= config.max_overlap_with_last_reply


def creator_lines(*, name: str, greeting: str, example_dialogue: str, player_name: str) -> list[str]:
    """The character's own lines as its creator wrote them: the greeting, then its example dialogue's lines."""
    lines = [greeting.strip()] if greeting.strip() else []
    for speaker, text in example_turns(example_dialogue, name=name, player_name=player_name):
        if speaker == "character":
            lines.append(text)
    return lines


def example_turns(example_dialogue: str, *, name: str, player_name: str) -> list[tuple[str, str]]:
    """The example dialogue (character-card `mes_example`) as ("player" | "character", text) turns.

    Lines open with `{{user}}:` / `{{char}}:` (or the names); a line without a label continues the turn
    before it; `<START>` separates examples. Macros in the text become the names.
    """
    turns: list[tuple[str, str]] = []
    label = re.compile(rf"^\s*(\{{\{{user\}}\}}|\{{\{{char\}}\}}|{re.escape(name)}|you|player|user)\s*:\s*(.*)$", re.I)
    for raw in example_dialogue.splitlines():
        line = raw.strip()
        if not line or line.upper() == "<START>":
            continue
        found = label.match(line)
        text = line
        if found:
            who = found.group(1).lower()
            speaker = "character" if who in ("{{char}}", name.lower()) else "player"
            text = found.group(2)
            turns.append((speaker, text))
        elif turns:
            turns[-1] = (turns[-1][0], f"{turns[-1][1]} {line}")
        else:
            continue
    named = [
        (speaker, text.replace("{{char}}", name).replace("{{user}}", player_name).strip()) for speaker, text in turns
    ]
    return [(speaker, text) for speaker, text in named if text]
