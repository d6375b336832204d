"""The kinds of fact a player tells a character about themselves, and the kind an indirect question asks for.

Players tell a character the same few kinds of thing about themselves (their name, where home is, their work,
their family, a pet, what they cannot eat, what frightens them, what they carry) and ask for them back the way
people do, by what the fact is for: "If you cook for me tonight, what should stay off my plate?" asks for
an allergy without naming one, and "Why would I be no use to you up on the roof?" asks for a fear. A sentence
embedding scores such pairs no higher than the small talk around them, so both sides are read by the words
people use for each kind: a sentence that tells the kind a question asks for answers it
(inference.narrative.recollection).
"""

from __future__ import annotations

import re

NAME, HOME, WORK, FAMILY, PET, AVOIDS, FEAR, BELONGING = (
    "name", "home", "work", "family", "pet", "avoids", "fear", "belonging"
)  # fmt: skip

KIN = (
    r"mother|father|mum|mam|mom|dad|brother|sister|aunt|auntie|uncle|niece|nephew|cousin|gran|granny|grandma|"
    r"grandmother|grandad|grandpa|grandfather|grandchild\w*|grandson|granddaughter|daughter|son|wife|husband|"
    r"missus|fianc\w*|twin|kids?|children|family|sweetheart|girlfriend|boyfriend|partner"
)
ANIMALS = (
    r"dog|pup|puppy|terrier|spaniel|hound|collie|cat|kitten|tom|parrot|bird|budgie|canary|goose|hen|tortoise|"
    r"turtle|lizard|gecko|snake|rabbit|hamster|ferret|pony|horse|mare|goat|pig|donkey|mule|goldfish|fish|rat|mouse"
)
FOODS = (
    r"eat|ate|eating|food|plate|dish|supper|dinner|lunch|breakfast|meal|cook\w*|bak\w*|sauce|recipe|fry|fried|"
    r"serve|pie|cake|bread|biscuits?|stew|soup|drink|spice\w*|seeds?|nuts?|snack|treat|taste|try"
)

TELLS: dict[str, re.Pattern[str]] = {
    NAME: re.compile(
        r"\b(?i:my (?:(?:actual|real|proper|full|first|middle|own) )?name(?: is|'s)|calls? me|known as)\b|"
        r"^(?i:name's|name is)\b|"
        r"\b(?i:i'm|i am)\s+[A-Z][a-z]+\b|^[A-Z][\w'-]*(?:'s| is) (?:the|my) name\b"
    ),
    HOME: re.compile(
        r"\b(?:i'm from|i am from|i come from|i came from|from|home is|home's|back home|live[sd]? in|living in|"
        r"grew up in|born in|raised in|originally)\b",
        re.I,
    ),
    WORK: re.compile(
        r"\b(?:by trade|for a living|my trade|my job|my work|i work|work as|worked as|apprentice\w*|my shop|"
        r"my workshop|my stall|my craft|make a bit extra|earn\w*|years? as an?)\b|"
        r"\b(?:i'm|i am|i was)\s+an?\s+(?!bit\b|little\b|lot\b|fan\b)[a-z-]*"
        r"(?:er|or|ist|ian|smith|maker|wright|man|woman|herd|keeper|wife|hand|nurse|cook|chef|clerk|scribe|vet)\b",
        re.I,
    ),
    FAMILY: re.compile(rf"\b(?:my|our)\s+(?:\w+\s+)?(?:{KIN})\b|\b(?:raised me|brought me up)\b", re.I),
    PET: re.compile(
        rf"\b(?:my|our)\s+(?:\w+\s+){{0,2}}(?:{ANIMALS})s?\b|"
        rf"\b(?:got|have|own|keep|left)\s+(?:an?|my|two|three)\s+(?:\w+\s+){{0,2}}(?:{ANIMALS})s?\b",
        re.I,
    ),
    AVOIDS: re.compile(
        r"\b(?:allerg\w*|intoleran\w*|can't (?:eat|have|touch|drink|stomach)|cannot (?:eat|have|touch)|"
        r"don't eat|never eat|won't eat|(?:and i|and me) don't get on|disagrees? with me|"
        r"(?:makes?|sets?|brings?|leaves?|gets?) me (?:out in|wheez\w*|sneez\w*|itch\w*|sick|ill|swell\w*|"
        r"break\w* out|off)|(?:come|comes|break|breaks|brought) out in|hives|rash|wheez\w*|sneez\w*|swells? up|"
        r"blows? up)\b",
        re.I,
    ),
    FEAR: re.compile(
        r"\b(?:afraid|scared|terrified|frightened|petrified|fear|phobia|dread|nightmares?|panic\w*|can't bear|"
        r"can't stand|jelly|faint\w*|scar(?:e|es|ed|y)|terrif\w*|frighten\w*|"
        r"weak at the knees|the creeps|the shivers|the willies|run a mile|"
        r"scream\w*|makes my teeth ache)\b",
        re.I,
    ),
    BELONGING: re.compile(
        r"\b(?:i (?:always |still )?(?:carry|carried|keep|kept|have|wear|bring|brought) \w+(?:\s+\w+){0,4} "
        r"(?:in|on|round|around|with|everywhere|for luck)|in my (?:pocket|bag|satchel|coat|pack|purse|case)|"
        r"on me|round my neck|for luck|never without|everywhere i go|i always (?:carry|have|keep|wear))\b",
        re.I,
    ),
}

ASKS: dict[str, re.Pattern[str]] = {
    # "If you had to holler for me across the jetty, what would you shout?": what the player is called.
    NAME: re.compile(
        r"\b(?:shout|holler|yell|call (?:out|down|up|after|for)|call me|tell (?:them|the others|folk|people)|"
        r"what will you (?:say|tell)|asking (?:around )?for|introduce|who (?:it )?(?:was|is) (?:that|who) "
        r"(?:helped|came|sat|visited))\b",
        re.I,
    ),
    HOME: re.compile(
        r"\b(?:from|home|hail|live|send (?:word|a letter|news)|address|envelope|postcard|write to (?:tell )?me|"
        r"heading (?:back|home)|"
        r"go(?:ing)? back to|get back to|grew up|visit me|pay me a visit|looking for me|"
        r"(?:come|came|coming) (?:to see|and see|to find|and find|to visit|and visit) me)\b",
        re.I,
    ),
    WORK: re.compile(
        r"\b(?:work|job|trade|living|do all day|do for|pay me|paid|pays me|make with my hands|profession|"
        r"occupation|craft|business|fix|mend|worried|handy|handiest|skills?|good at|what i do|of all people|"
        # What the player is the one to call on for: "why am I the fellow to fetch?", "send them my way".
        r"(?:the|just the|the right|the best|the only) (?:man|woman|fellow|person|one|chap|lass|lad|sort) to|"
        r"(?:fetch|send for|call for|come to|run to fetch) me|my way)\b",
        re.I,
    ),
    FAMILY: re.compile(
        rf"\b(?:{KIN}|raised me|brought me up|write to|ring|birthday|waiting (?:for|in)|looking for|grandparent)\b",
        re.I,
    ),
    PET: re.compile(
        rf"\b(?:pet|furry|feathered|sulk\w*|snooz\w*|feed|fed|walkies|creature at home|little madam|"
        rf"little fellow|{ANIMALS})\b",
        re.I,
    ),
    AVOIDS: re.compile(
        rf"\b(?:allerg\w*|sets? (?:my nose|me) off|sneez\w*|itch\w*|rash|wheez\w*|pillows?|jumpers?|"
        rf"make me (?:ill|sick|swell)|put me in bed)\b|"
        rf"\b(?:{FOODS})\b.*\b(?:not|n't|never|off|out|away|avoid|careful|keep|leave|without|stay|ill|sick|bed|"
        rf"should i)\b|\b(?:not|n't|never|avoid|careful|keep|leave|without)\b.*\b(?:{FOODS})\b",
        re.I,
    ),
    FEAR: re.compile(
        r"\b(?:afraid|scared|frighten\w*|fear\w*|terrif\w*|running|run (?:away|off|a mile|the other way|down)|"
        r"scream\w*|faint|hide|grab my hand|hold my hand|shoo|no use|nightmares?|panic\w*|shak\w*|"
        r"the other way|jump out of my skin)\b",
        re.I,
    ),
    BELONGING: re.compile(
        r"\b(?:pocket|bag|satchel|pack|on me|carry|carrying|pull out|always have|with me|for luck|coat|purse)\b",
        re.I,
    ),
}


def tells_own_name(sentence: str) -> bool:
    """Whether the player names themselves in the sentence ("Name's Rowena", "I'm Corin")."""
    return bool(TELLS[NAME].search(sentence))


def kinds_told(sentence: str) -> set[str]:
    """The kinds of fact about the player that a sentence of theirs tells."""
    return {kind for kind, pattern in TELLS.items() if pattern.search(sentence)}


def kinds_asked(question: str) -> set[str]:
    """The kinds of fact about the player that a question asks for, by what it wants the fact for."""
    return {kind for kind, pattern in ASKS.items() if pattern.search(question)}
