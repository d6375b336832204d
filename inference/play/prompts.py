"""Typed prompts that describe a change of the world, turned into world events by a fixed word list.

This is the deterministic baseline the worker always has: "make it night", "it starts snowing", "a red
tower appears ahead" become events of the vocabulary in inference/world/EVENTS.md. A prompt it does not
recognise yields no event and goes to the narrator. The narrative engine may put a learned classifier in
front of it; this list stays as the fallback that needs no model.

Words about the weather are not always a wish for it. A question ("is it going to rain?") or a request to be
told ("tell me about the crystals") changes nothing, nor does the player acting on the world ("I walk into the
rain"): `asks_for_words` sends it to the narrator; a request put as a question or a suggestion ("could it be
daytime?", "can you make it rain?", "how about some fog?") still asks for the change, and wishing a change away
before it comes ("I hope it doesn't rain") or putting it off ("hold off on the nightfall") asks for none. A
negation, an undoing or an aversion ("no more snow", "undo the rain", "make the fog go away", "I'm sick of this
rain") asks for the event that undoes what it names (`UNDOING`, from the table in inference/world/EVENTS.md: clear
ends snow, rain and fog; day and night end each other); what nothing undoes (a spawned tower, the dawn) yields no
event. `negated` finds the negation and `without_negation` leaves what it negates, for the keyword list here and
for the learned classifier alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from inference.world.events import CLEARED_NARRATIONS, OBJECT_KINDS

# Each kind with the words and phrases that name it, as a reader of weather and times of day knows them. A
# pattern matches whole words; a clause's kinds come out in the order they are named ("sunrise, then some
# light rain"). "sun" is the day unless it rises (dawn) or sets (night); "light" alone names nothing here,
# since it is as often a lantern or an adjective ("light rain").
WEATHER_AND_TIME: tuple[tuple[str, str], ...] = (
    ("clear", r"clear\w*|stops?|sunny|lift(?:s|ing)?|(?:blue|clear|fine) (?:sky|skies|weather)"
              r"|clouds? (?:part|break)\w*|fair weather|dry (?:out|up)|brighten(?:s|ing)? up"),
    ("night", r"night\w*|nite|midnight|dark\w*|moon\w*|stars?|starry|starlit|starlight|dusk|twilight|sunset"
              r"|evening|pitch black|lights out|sun (?:go(?:es)?|goes|going|went) down|sun set(?:s|ting)?|sun sink\w*"),
    ("dawn", r"dawn\w*|sunrise|sun ?up|daybreak|day break\w*|morning|first light|cock ?crow"
             r"|sun (?:(?:start|begin)\w* (?:to )?)?(?:rise[sn]?|rising|rose|come[s]? up|coming up|came up|up)"
             r"|sun(?:'s)? (?:peep|peek|creep|climb|poke|edg|inch|crawl)\w* (?:up|over)"),
    ("day", r"day|days|daytime|daylight|broad daylight|noon|midday|mid-day|high noon|lunch ?time|afternoon|bright\w*"
            r"|sunshine|sunlight|sun\w*"),
    ("snow", r"snow\w*|blizzard\w*|flurr(?:y|ies)|sleet|white ?out|(?:blanket|dusting) of white|flakes?|winter\w*"
             r"|wintry"),
    ("rain", r"rain\w*|storm\w*|downpour\w*|drizzl\w*|showers?|thunder\w*|lightning|deluge|monsoon|pour(?:s|ing)?"
             r"|bucket\w* down|heavens open|open(?:s|ed)? the heavens|(?:soak|drench)(?:es|s)? (?:the|everything|us|me)"
             r"|cats and dogs|wet weather"),
    ("fog", r"fog\w*|mist\w*|haze|hazy|murk\w*|smog\w*|pea[- ]?soup\w*|sea fret|clouds?|cloudy|overcast"),
)  # fmt: skip
WEATHER_PATTERNS = tuple((kind, re.compile(rf"\b(?:{words})\b", re.IGNORECASE)) for kind, words in WEATHER_AND_TIME)
# Words that bring something into being, or say it is there now ("a beast shows up", "I want a dragon").
SPAWN = re.compile(
    r"\b(?:appear\w*|spawn\w*|summon\w*|conjure\w*|raise[sd]?|rais(?:es|ing)|rises?|rising|grow\w*|build\w*|place"
    r"|put|create\w*|add|emerge\w*|materiali[sz]e\w*|arrives?|plant\w*|sprout\w*|show(?:s|ed|ing)? up"
    r"|pop(?:s|ped|ping)? up|turn(?:s|ed|ing)? up|stick|plonk|pop(?=\s+(?:a|an|some|another)\b)|send\w*|make"
    r"|give me|bring\w*|want|wish|need|there(?:'s| is| are| be)|let there|erect\w*|set up"
    r"|drop|produce|manifest\w*|hang\w*|hung|set|install\w*|let|(?:'d|would)\s+(?:really\s+)?(?:like|love)"
    r"|(?:can|could|may)\s+(?:we|i|you)\s+(?:please\s+)?have|stand\w*\s+(?:\w+\s+){0,4}?up"
    r"|(?:com(?:e|es|ing)|wander(?:s|ing)?|trot(?:s|ting)?|fl(?:y|ies|ying)|creep(?:s|ing)?|drift(?:s|ing)?)"
    r"\s+(?:\w+ing\s+)?(?:in|out|along|by|over|here|up|past|down|through|across|around|into view|and)"
    r"|com(?:e|es|ing)(?=\W*$))\b",
    re.IGNORECASE,
)
OBJECT_WORDS: dict[str, str] = {kind: kind for kind in OBJECT_KINDS} | {
    word: kind
    for kind, words in (
        ("tower", "towers spire spires turret turrets steeple belfry obelisk castle watchtower watchtowers fortress"),
        ("tree", "trees oak oaks pine pines willow birch elm yew sapling palm maple cedar spruce fir"),
        ("lantern", "lanterns lamp lamps lamppost torch torches candle candles beacon"),
        ("crystal", "crystals gem gems gemstone jewel jewels shard shards diamond quartz amethyst emerald ruby"),
        ("creature", "creatures monster monsters beast beasts animal animals dragon dragons wolf wolves bear fox "
                     "deer owl troll goblin golem unicorn critter serpent cat cats dog dogs horse horses bird birds "
                     "raven crow rabbit hare stag boar badger squirrel hedgehog mouse mice rat goat goats sheep cow "
                     "cows pig duck ducks goose geese swan frog toad snake lizard bat bats seal gull seagull otter "
                     "moose elk lion tiger monkey spider beetle moth butterfly crab whale dolphin"),
    )
    for word in words.split()
}  # fmt: skip
COLOR_WORDS: dict[str, tuple[int, int, int]] = {
    "red": (200, 40, 40), "green": (40, 160, 60), "blue": (50, 80, 200), "yellow": (230, 210, 60),
    "white": (235, 235, 235), "black": (25, 25, 25), "purple": (140, 60, 170), "orange": (230, 130, 40),
    "gold": (220, 180, 60), "silver": (190, 195, 200),
}  # fmt: skip


# The event that undoes each kind; a kind missing here has none (a clear is an ending already, see `undoing`).
UNDOING: dict[str, str] = {"snow": "clear", "rain": "clear", "fog": "clear", "night": "day", "day": "night"}
NEGATION = re.compile(
    r"\b(?:no more|no longer|any ?more|no|not|never|stop(?:s|ped|ping)?|put an end to|end(?!\s+of\b)|enough(?: of)?|"
    r"without|(?:is|are|'s|feels?|seems?|looks?|gets?|getting)\s+(?:far\s+|way\s+|much\s+|a (?:bit|little)\s+)?too"
    r"(?=\s+(?!(?:much|many)\b)[a-z]+)|"
    r"go(?:es)? away|away|get rid of|eas(?:e|es|ing) off|di(?:e|es|ing) down|let(?:s|ting)? up|blow(?:s|ing)? over|"
    r"rid of|remove|banish|dispel|disperse|cease|halt|scrap\w*|ditch|nix|"
    r"(?:hurt|sting|blind)\w*(?=\s+(?:my|our)\s+eyes\b)|undo(?:es|ing|ne)?|reverse[sd]?|reversing|cancel\w*|"
    r"take (?:back|away)|call off|(?:disappear|vanish)\w*(?=\W*$)|"
    r"(?:do|does|did|is|are|was|were|wo|ca)n't|(?:do|does|did) not|dont|doesnt|isnt|wont|"
    r"(?:sick|tired|weary) of|fed up with|had enough of|hate|can't stand|out of here|be gone|begone|away with|"
    r"chase (?:off|out)|drive (?:off|out)|(?:turn|switch|shut)(?:s|ed)? off|"
    r"too much|too (?=(?:dark|bright|foggy|misty|hazy|murky|gloomy|snowy|rainy|wet|sunny|cloudy|light)\b))\b",
    re.IGNORECASE,
)
# A question word first ("what if" and "how about" propose, they do not ask), or a verb before its subject.
ASKING = re.compile(
    r"^(?:(?:who|whom|whose|what|which|where|when|why|how)\b(?!\s+(?:about|if)\b)"
    r"|(?:is|are|am|was|were|do|does|did|has|have|had)\b"
    r"|(?:will|would|can|could|shall|should|may|might)\s+(?:it|there|the|this|that|i|we|he|she|they)\b)",
    re.IGNORECASE,
)
# Before what the player asks: an interjection or the name of whom they speak to ("Eve, tell me about…").
OPENING = re.compile(r"^\s*(?:(?:so|ok|okay|well|hey|um|uh|oh|hmm)\b[,!]?\s*|[A-Z][a-z]+,\s+)+")
TELLING = re.compile(
    r"\b(?:tell|tells|told|explain\w*|describ\w*|(?:talk|speak)(?:s|ing)?(?: to me| with me)? (?:about|of)|remind me|"
    r"i wonder|want to know|like to know|hear (?:more )?about|learn (?:more )?about|know (?:more )?about|"
    r"curious about|what about|story about|stories about)\b",
    re.IGNORECASE,
)


# A question that asks for a change rather than about one: "could it be daytime?", "may we have some snow?"
# ("can you…", "would we…" are `PROPOSING`'s). "will it snow?" and "could it get any darker?" still only ask.
# "can the snow stop now?" and "could a fox wander in?" ask as much, with the world's thing as the subject;
# "will the fog lift?" only asks what will happen.
REQUESTING = re.compile(
    r"^(?:please\s+)?(?:(?:(?:can|could|may)\s+(?:it|i|there)|may\s+(?:you|we))\s+(?:please\s+)?(?:not\s+)?"
    r"(?:make|have|get|be|turn|bring|let|become|change|stop|start|give|summon|conjure|spawn|build|put|grow|plant"
    r"|raise|add|create|send|clear|lift|end)\b"
    r"|(?:can|could)\s+(?:the|this|that|a|an|some|another)\s+(?:\w+\s+){0,2}?"
    r"(?:stop|end|go|lift|clear|come|appear|show|grow|arrive|wander|trot|fly|creep|drift|turn|become|start|fall"
    r"|roll|rise|set|ease|die|let|blow|melt|fade)\w*\b)"
    r"(?!.*\bany\s+\w+er\b)",
    re.IGNORECASE,
)
# A wish put as a question or a suggestion: "how about we make it night?", "any chance of some mist?", "can we
# skip to noon?", "would you paint the sky pink?". Asking the listener to perceive or know something ("can you
# see the tower?", "would you like to…") asks for no change; "can it rain for a while?" asks for rain, where
# "will it rain?" only asks what will happen.
PROPOSING = re.compile(
    r"^(?:please\s+)?(?:how about|what if|is it possible to|is there (?:any |some )?way\b|would it be possible to"
    r"|any chance\b|.*\b(?:be|is)\s+(?:that\s+)?possible\W*$"
    r"|(?:can|could|would|will|might|shall)\s+(?:you|we|ya)\s+(?:please\s+)?(?:just\s+)?"
    r"(?!(?:see|hear|smell|feel|remember|know|find|believe|think|guess|imagine|recall|understand|tell|say|explain"
    r"|describe|like|prefer|rather|want|care|help|hold)\b)[a-z]+"
    r"|(?:can|could|may)\s+it\s+(?:please\s+)?(?:just\s+)?(?:rain|snow|pour|drizzle|storm|thunder|hail|sleet"
    r"|darken|brighten|clear)\b)",
    re.IGNORECASE,
)
# A request with its question put after it: "hide the walls in fog, would you?".
ASKED_AS_A_FAVOUR = re.compile(r",\s*(?:would|could|will|can)\s+you(?:\s+please)?\W*$", re.IGNORECASE)
# The player doing something in the world ("I walk into the rain", "I light my lantern") rather than wishing
# it changed ("I want it to stop snowing", "I summon a beast", "I'm sick of this rain").
PLAYER_ACTS = re.compile(
    r"^(?:then\s+)?i\s+(?!(?:want|wanna|wish|would|'d|need|hope|demand|ask|summon|conjure|make|call|cast|bring|"
    r"raise|build|create|spawn|place|put|plant|let|pray|beg|am|'m|don't|do not|can't|cannot|hate|think|guess)\b)[a-z]+",
    re.IGNORECASE,
)
# A prompt opening with one of these asks the world itself to change ("make the sky purple", "let it thunder"),
# unless it turns the player ("turn left" is a move).
CHANGE_REQUEST = re.compile(
    r"^(?:please\s+)?(?:make|let|turn|change|bring|summon|conjure|spawn|create|build|raise|add|remove|banish)\b"
    r"(?!\s+(?:left|right|around|back)\b)",
    re.IGNORECASE,
)
WORLD_CAN = (
    "the world can turn day, dawn or night, bring snow, rain or fog and clear them, or raise a tower, a tree, a "
    "lantern, a crystal or a creature"
)


def unchanged_reason(text: str) -> str | None:
    """What to tell a player whose prompt asked for a change no world event makes, or None when it did not ask
    for one (an action or words for the narrator). Said instead of a narration, which could describe a change
    the picture never shows."""
    if asks_for_words(text):
        return None
    if (
        negated(text)
        and not PREVENTION.search(text)  # "I hope it doesn't rain" asked to end nothing
        and names_world_things(without_negation(text))
        and not events_from_prompt(text)
    ):
        return f"Nothing changed: what you asked to end stays, since nothing here undoes it ({WORLD_CAN})."
    if CHANGE_REQUEST.match(text.replace("\u2019", "'").strip()):
        return f"Nothing changed: that is not a change this world knows ({WORLD_CAN})."
    return None


def names_world_things(text: str) -> bool:
    """Whether the text names an object, a time of day or a weather that world events make."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    return bool(words & set(OBJECT_WORDS)) or any(pattern.search(text) for _, pattern in WEATHER_PATTERNS)


def asks_for_words(text: str) -> bool:
    """Whether the prompt is a question or asks to be told something, rather than asking for a change (an
    action of the player's, "I walk into the rain", changes nothing either)."""
    text = OPENING.sub("", text.replace("\u2019", "'").strip())
    if TELLING.search(text):
        return True
    if REQUESTING.match(text) or PROPOSING.match(text) or ASKED_AS_A_FAVOUR.search(text):
        return False
    return text.endswith("?") or bool(ASKING.match(text)) or bool(PLAYER_ACTS.match(text))


def negated(text: str) -> bool:
    return bool(NEGATION.search(text.replace("\u2019", "'")))


def without_negation(text: str) -> str:
    """The words a negation applies to: "make the fog go away" -> "make the fog"."""
    return " ".join(NEGATION.sub(" ", text.replace("\u2019", "'")).split())


def undoing(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events that undo `events`, each once; none for a kind nothing undoes. Ending a weather ends that one
    alone: "no more snow" in a foggy world leaves the fog."""
    undone: list[dict[str, Any]] = []
    for event in events:
        if event["kind"] == "clear":
            undo = dict(event)  # "clear the mist away": clearing is an ending already, of the mist alone
        elif UNDOING.get(event["kind"]) == "clear":
            undo = weather_ended({event["kind"]})
        elif event["kind"] in UNDOING:
            undo = {"kind": UNDOING[event["kind"]]}
        else:
            continue
        if undo not in undone:
            undone.append(undo)
    return undone


def weather_ended(weathers: set[str]) -> dict[str, Any]:
    """The `clear` that ends the one weather named alone, or every weather when several (or none) are."""
    if len(weathers) == 1 and (weather := next(iter(weathers))) in CLEARED_NARRATIONS:
        return {"kind": "clear", "object": weather}
    return {"kind": "clear"}


CLAUSE_SPLIT = re.compile(r"\s*(?:,|;|\band then\b|\bthen\b|\band\b(?!\s+dogs\b)|\bplus\b)\s*", re.IGNORECASE)
# A clause that forbids a change asks for none: "don't make it snow" is not "stop the snow", unless it says
# that what is there should end ("don't let it be dark any more").
PROHIBITION = re.compile(
    r"^(?:please\s+)?(?:(?:do|did)\s*n[o']?t|dont|never|no need to|you needn't)\s+(?:you\s+)?(?:dare\s+)?"
    r"(?:make|let|bring|start|turn|summon|spawn|give|put|create|conjure|add|build|send|cause)\b",
    re.IGNORECASE,
)
# Wishing a change away before it comes, or putting it off, asks for nothing now: "make sure it doesn't get
# foggy", "I hope it doesn't rain tonight", "hold off on the nightfall".
PREVENTION = re.compile(
    r"\b(?:(?:make sure|ensure|hope|rather|prefer|careful)\b.*\b(?:it|there|we)\s+(?:doesn't|does not|didn't|did not"
    r"|don't|do not|won't|will not|never)|hold(?:ing)? off|postpone\w*|put off|not yet|wait (?:with|on|before))\b",
    re.IGNORECASE,
)
# "turn this drizzle into snow" and "swap this rain for snow" ask for the snow; what is turned is replaced by it.
TURNED_INTO = re.compile(
    r"^.*?\b(?:(?:turn|change|transform|switch)\w*\s+.+?\s+(?:in)?to|(?:swap|switch|exchange|trade|replace)\w*\s+.+?\s+"
    r"(?:for|with))\s+(?=\w)",
    re.IGNORECASE,
)
# "a mist so thick I can't see my own hand": how much of it, not a negation.
RESULT_CLAUSE = re.compile(r"\b(?:so|such)\s+\w+\s+(?:that\s+)?(?:i|you|we|they|one|nobody|no one)\b.*$", re.I)
# Delight in what is there asks for nothing: "the stars are gorgeous tonight", "the rain sounds lovely".
APPRECIATION = re.compile(
    r"^(?:wow\W*|oh\W*)?(?:the|this|that|these|those|your|what)\b.*?\b(?:is|are|'s|was|were|looks?|seems?|sounds?"
    r"|feels?)\s+(?:so\s+|really\s+|very\s+|quite\s+|absolutely\s+|truly\s+)?(?:gorgeous|beautiful|lovely|pretty"
    r"|nice|amazing|stunning|wonderful|magical|peaceful|incredible|breathtaking|perfect|eerie|spooky|cosy|cozy"
    r"|romantic|soothing|calming)\b",
    re.IGNORECASE,
)
CESSATION = re.compile(r"\b(?:any ?more|no more|no longer|stop\w*|end|away)\b", re.IGNORECASE)
# A clause after the first that says when or how ("make it early morning, just as the sun's peeking over the
# edge") paints the change already asked for; it asks for no other.
ELABORATION = re.compile(r"^(?:just\s+|right\s+)?(?:as|when|while|like|until|till|so that|because|since)\b", re.I)
# "this fog is kind of beautiful" speaks of the weather there is; "this rain is too much" and "the fog is
# lifting" still ask for a change.
REMARK_ON_WEATHER = re.compile(
    r"^(?:all\s+)?(?:this|that|these|those)\s+\w+\s+(?:is|'s|was|looks|seems|feels|makes)\b"
    r"(?!.*\b(?:too|so much|enough|lift\w*|clear\w*|go\w*|gone|stop\w*|end\w*|fad\w*|thin\w*)\b)",
    re.IGNORECASE,
)
# Said to someone on parting or meeting, "good night, Odo" wishes no night; whom it is said to goes with it.
GREETING = re.compile(
    r"^(?:good\s*(?:night|morning|evening|afternoon|day)|g'?night|nighty[- ]night)\b"
    r"(?:\s*,?\s*[\w']+\s*[!.]*\s*$)?\W*",
    re.IGNORECASE,
)


# A weather joined to the one before it without a verb of its own ("and the rain", "or the fog").
WEATHER_WORDS = "|".join(words for kind, words in WEATHER_AND_TIME if UNDOING.get(kind) == "clear")
JOINED_WEATHER = re.compile(rf"^(?:(?:the|this|that|all (?:the|this|that))\s+)?(?:{WEATHER_WORDS})\W*$", re.I)


@dataclass(frozen=True)
class Clause:
    """One clause of a prompt that may ask for a change: the words to classify, and whether it asks for the
    change that undoes what those words name ("no more fog" is read as "fog", undone)."""

    reading: str
    undo: bool


def clauses_of(text: str) -> list[Clause]:
    """The clauses of a prompt that may ask for a change. A clause after the first that is the player's own
    remark ("no more fog, I can't see a thing") or a question asks for nothing, nor does a prohibition."""
    text = GREETING.sub("", text.replace("\u2019", "'").strip())
    found: list[Clause] = []
    for index, clause in enumerate(part for part in CLAUSE_SPLIT.split(text) if part and re.search(r"\w", part)):
        if index > 0 and found and found[-1].undo and JOINED_WEATHER.match(clause):
            # "stop the snow and the rain": the rain is stopped too.
            found.append(Clause(clause, undo=True))
            continue
        forbids = PROHIBITION.match(OPENING.sub("", clause)) and not CESSATION.search(clause)
        said_in_passing = (
            REMARK_ON_WEATHER.match(clause) or APPRECIATION.match(clause) or (index > 0 and ELABORATION.match(clause))
        )
        if forbids or PREVENTION.search(clause) or said_in_passing or (index > 0 and asks_for_words(clause)):
            continue
        clause = RESULT_CLAUSE.sub("", TURNED_INTO.sub("", clause))
        if negated(clause):
            reading = without_negation(clause)
            if re.search(r"\w", reading):
                found.append(Clause(reading, undo=True))
        else:
            found.append(Clause(clause, undo=False))
    return found


def events_from_prompt(text: str) -> list[dict[str, Any]]:
    """World events a prompt asks for (possibly none), from the words of each clause."""
    if asks_for_words(text):
        return []
    events: list[dict[str, Any]] = []
    for clause in clauses_of(text):
        found = named_events(clause.reading)
        events += undoing(found) if clause.undo else found
    return distinct(events)


def distinct(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` with each event once, in order, and one `clear` where clauses asked for several: of the one
    weather they name ("I'm tired of this mist, lift it"), or of every weather ("no fog, no rain, a clear sky")."""
    clears = [event for event in events if event["kind"] == "clear"]
    if len(clears) > 1:
        merged = weather_ended({event["object"] for event in clears if "object" in event})
        first = events.index(clears[0])
        events = [
            merged if index == first else event
            for index, event in enumerate(events)
            if event["kind"] != "clear" or index == first
        ]
    return [event for index, event in enumerate(events) if event not in events[:index]]


# A thing named as on a list ("first a tree, then a tower next to it", "another lantern please") is asked for;
# "a tree over there looks ancient" says more than where it is, and is a remark.
LISTED_THING = re.compile(
    r"^(?:(?:first|then|and|also|next|now|plus|just|oh|maybe)\s+)*(?:a|an|another|some|one more|more|two|three|\d+)"
    r"\s+(?:[a-z]+\s+){0,2}?[a-z]+"
    r"(?:\s+(?:here|there|over there|nearby|please|too|as well|next to (?:it|that|this|me|the \w+)"
    r"|(?:by|near|beside|in|on|at) the \w+|to the (?:left|right)))*\W*$",
    re.IGNORECASE,
)


# Where something happens rather than what: "snowflakes drifting down past the lanterns" asks for snow.
LOCATIVE = re.compile(
    r"\b(?:past|by|near|beside|behind|around|over|under|among|between|above|below|along|across|through|"
    r"in front of|next to|on top of)\s+(?:the|my|those|these|that|this|our|your)\s+(?:[a-z]+\s+){0,2}?[a-z]+$",
    re.IGNORECASE,
)
# Words with "day" that name no time of day ("enough snow for one day").
DAY_IDIOM = re.compile(r"\b(?:for (?:one|a|the) day|one day|some ?day|all day|the other day|these days)\b", re.I)


def named_events(text: str) -> list[dict[str, Any]]:
    """The events whose words the text names, negated or not, in the order it names them."""
    text = DAY_IDIOM.sub(" ", text)
    taken: list[tuple[int, int, str]] = []  # (start, end, kind) of each span named
    for kind, pattern in WEATHER_PATTERNS:
        for found in pattern.finditer(text):
            # A span a kind earlier in the table took ("sun up" for the dawn) is not the day's "sun" too.
            if not any(start < found.end() and found.start() < end for start, end, _ in taken):
                taken.append((found.start(), found.end(), kind))
    # A thing named inside a weather's words ("raining cats and dogs") or as where it happens is not asked for.
    objects = [
        OBJECT_WORDS[word.group().lower()]
        for word in re.finditer(r"[a-zA-Z]+", text)
        if word.group().lower() in OBJECT_WORDS
        and not any(start <= word.start() < end for start, end, _ in taken)
        and not (taken and LOCATIVE.search(text[: word.end()]))
    ]
    if objects:
        if not SPAWN.search(text) and not LISTED_THING.match(text):
            return []  # "the tree over there looks ancient" speaks of what is there, it asks for nothing
        words = re.findall(r"[a-z]+", text.lower())
        color = next((COLOR_WORDS[word] for word in words if word in COLOR_WORDS), None)
        event: dict[str, Any] = {"kind": "spawn", "object": objects[0]}
        if color is not None:
            event["color"] = list(color)
        # "a lantern appears" is about the lantern, not about light or the time of day.
        return [event]
    kinds = [kind for _, _, kind in sorted(taken)]
    named = set(kinds) & set(CLEARED_NARRATIONS)
    if "clear" in kinds and named:
        return [weather_ended(named)]  # "the fog should lift" names the fog to end it, and only the fog
    if "clear" in kinds and set(kinds) & {"night", "dawn", "day"}:
        kinds.remove("clear")  # "a bright sunny afternoon" is the afternoon, "sunny" only paints it
    return [{"kind": kind} for kind in dict.fromkeys(kinds)]
