"""A question about the player answered from what the player told: the recalled sentence that answers it and
the span in that sentence that is the answer (a name, a place, a number or a thing).

A small model given the memory in its prompt still states the fact only now and then, and a similarity
threshold alone picks the wrong memory: natural indirect questions ("What was my brother called again?")
sit close to many memories, a consolidated summary repeats its sources word for word and counts as a rival,
and a distractor ("an old fisherman called Aldo") wins on a shared word ("called"). So the answer is found
the way a reading-comprehension baseline finds it, extractively:

- the recalled memories are split into sentences and deduplicated, which merges a summary with its sources;
- each sentence is scored by its MiniLM cosine to the question, the question's topic words it shares
  ("brother"; "called" and "named" only say that a name is wanted), and whether it speaks of the same
  thing of the player's ("my brother" in both);
- the question's form says what kind of answer it wants (who and names: a name; where: a place; how many
  and when: a number; otherwise a thing), and a sentence that holds no span of that kind does not answer it.

- a sentence that tells the kind of fact the question asks for (inference.narrative.player_facts: "I'm
  allergic to honey" for "what should stay off my plate?") counts, however far apart their embeddings;
- the candidates are the prompt's memories and more of the player's by relevance alone (`told` in
  `session.recalled`), since what the player told may be forty turns old;
- a winner that neither names the same thing of the player's as the question nor tells the kind of fact it
  asks for is said only when it stands out from the other candidates: asked what the player never told, the
  best of the rest is a name or a place that fits the question's form, and a character that says it states
  a wrong memory as if it were one;
- where no rule finds an answer, the player's own sentence nearest the question is said back whole when it
  stands out far from the rest (a question put as a riddle, "why would the vicar send for me?", holds no
  span a rule can type).

The winner is said back in the second person ("Your brother is called Marco.") as the opening of the
character's reply (inference.narrative.prompting), so even a tiny model states the fact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from inference.language.embedding import Embedder
from inference.narrative.memory import PRONOUN_START, extract_memories, to_second_person
from inference.narrative.player_facts import HOME as HOME_FACT
from inference.narrative.player_facts import NAME as NAME_FACT
from inference.narrative.player_facts import kinds_asked, kinds_told, tells_own_name

NAME, PERSON, PLACE, NUMBER, THING = "name", "person", "place", "number", "thing"

SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
WORD = re.compile(r"[a-z0-9']+")
QUESTION_FORM = re.compile(
    r"\?\s*$|^\s*(what|what's|whats|who|where|when|which|how|do you|did i|did you|have i|can you|could you|"
    r"tell me|remind me|remember|you remember|any idea)\b",
    re.I,
)
ABOUT_THE_PLAYER = re.compile(r"\b(my|mine|i|me|i'm|i've|i'd|myself)\b", re.I)
# "And her name?" after "What does my wife do?": the pronoun is someone of the player's the last line named.
SOMEONE_MENTIONED = re.compile(r"\b(her|his|their|she|he|they|them|him)\b", re.I)
# Words that say what kind of answer is wanted, not what it is about.
NAME_WORDS = {"name", "names", "named", "called", "call", "calling", "who", "whom"}
# Topic words and the words a player uses for the same thing when telling it.
RELATED_WORDS = {
    "job": {"work", "trade", "living", "profession"}, "work": {"job", "trade", "living"},
    "living": {"work", "job", "trade"}, "pet": {"dog", "cat", "bird", "parrot"},
    "drink": {"drink", "ale", "tea", "wine"}, "food": {"eat", "dish", "meal"}, "afraid": {"fear", "scared"},
    "fear": {"afraid", "scared"}, "scared": {"afraid", "fear"}, "boat": {"ship", "vessel"}, "ship": {"boat"},
    "sibling": {"brother", "sister"},
    "family": {"brother", "sister", "mother", "father", "wife", "husband", "daughter", "son", "mum", "mam", "mom",
               "dad", "grandmother", "grandfather", "granddaughter", "grandson", "aunt", "uncle", "cousin", "niece",
               "nephew", "child", "children", "kid", "kids", "baby", "grandparent"},
    "home": {"live", "house", "grew", "born", "raised"},
}  # fmt: skip
# Words for the same person of the player's: "my little girl" is "my daughter".
SAME_PERSON = {
    "girl": {"daughter"}, "lass": {"daughter"}, "boy": {"son"}, "lad": {"son"}, "daughter": {"girl"},
    "son": {"boy"}, "mum": {"mother"}, "mam": {"mother"}, "mom": {"mother"}, "mother": {"mum"}, "dad": {"father"},
    "father": {"dad"}, "gran": {"grandmother"}, "granny": {"grandmother"}, "grandma": {"grandmother"},
    "grandad": {"grandfather"}, "grandpa": {"grandfather"}, "missus": {"wife"}, "hubby": {"husband"},
}  # fmt: skip
PLACE_WORDS = {"where", "town", "city", "village", "country", "place", "from", "live", "lived", "grew", "born"}
NUMBER_WORDS = {"many", "old", "age", "year", "years", "much", "when", "number"}
STOP_WORDS = {
    "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "for", "with", "by", "about", "from",
    "is", "are", "was", "were", "be", "been", "am", "do", "does", "did", "done", "have", "has", "had", "i", "my",
    "me", "mine", "you", "your", "yours", "we", "it", "its", "it's", "that", "this", "these", "those", "what",
    "what's", "whats", "which", "who", "whom", "where", "when", "why", "how", "again", "remember", "remind",
    "tell", "told", "say", "said", "know", "knew", "recall", "still", "ever", "can", "could", "would", "will",
    "should", "there", "here", "any", "idea", "just", "so", "oh", "hey", "please", "once", "back",
    "then", "now", "mention", "mentioned", "think", "thing", "something", "anything", "i'd", "i'll", "i'm",
    "i've", "can't", "don't", "didn't", "won't", "couldn't", "that's", "you're", "you'd", "d'you",
}  # fmt: skip
NUMBER_WORD = (
    r"(?:\d+|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[- ](?:one|two|three|four|five|six|"
    r"seven|eight|nine))?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
    r"fifteen|sixteen|seventeen|eighteen|nineteen|hundred|thousand|a dozen|dozen)"
)
NAME_AFTER = re.compile(
    r"\b(?i:called|named|name is|name's|names are|i'm|i am|calls? me|known as)\s+(?:the\s+)?"
    r"((?:[A-Z][\w'-]*)(?:\s+[A-Z][\w'-]*)?)"
)
NAME_BEFORE = re.compile(r"^([A-Z][\w'-]*)(?:'s| is| was) (?:what|my|our|the)\b.*\b(?:name|called)\b")
CAPITALISED = re.compile(r"\b[A-Z][a-z][\w'-]*(?:\s+[A-Z][a-z][\w'-]*)?")
PLACE_AFTER = re.compile(
    r"\b(?:in|at|from|near|on|to|by)\s+((?:the\s+)?(?:[A-Z][\w'-]*)(?:\s+(?:of|on|upon)\s+[A-Z][\w'-]*|\s+(?!I\b)[A-Z][\w'-]*)*)"
)
# Where the player comes from or lives: "from Kraków", "back home in Tallowgate", "I grew up in Saltcombe".
HOME_PLACE = re.compile(
    r"\b(?:from|home (?:in|at|to)|live[sd]? in|living in|grew up in|born in|raised in)\s+"
    r"((?:the\s+)?[A-Z][\w'-]*(?:\s+(?!I\b)[A-Z][\w'-]*)*)"
)
# "From" at a question's end asks for a place ("what part of the world do I hail from, then?"); "what would you
# shoo away from me?" does not.
COMES_FROM = re.compile(
    r"\bfrom\b(?:\s*,?\s*(?:then|again|originally|exactly|really|anyway|did i say|do you remember))*\W*$", re.I
)
# A question about where the player comes from or lives ("where's home for me?", "what part of the world do I
# hail from?"), which such a place answers first.
ASKS_FOR_HOME = re.compile(r"\b(?:from|home|live|hail)\b", re.I)
PLACE_PHRASE = re.compile(
    r"\b(?:in|at|from|near|on|by|under|behind)\s+((?:the|a|an|my|our)\s+[\w'-]+(?:\s+(?!(?:in|at|on|by|with|and|but|"
    r"because|when|where|since)\b)[\w'-]+){0,4})"
)
NUMBER_SPAN = re.compile(rf"\b({NUMBER_WORD}(?:\s+[a-z]+)?)\b", re.I)
THING_AFTER_VERB = re.compile(
    r"\b(?:i|my \w+|we)\s+(?:\w+ly\s+)?(?:have|had|has|own|owned|found|lost|keep|kept|carry|carried|bought|got|"
    r"brought|love|loved|like|liked|hate|hated|fear|feared|collect|build|built|make|made|play|played|eat|ate|"
    r"sail|sailed|drive|drove|ride|rode|wear|wore|hid|buried|stole|sold|gave|give|am afraid of|am scared of|"
    r"saw|see|met|meet|heard|know|knew|watched|followed|helped|married|visited|miss|missed|lost|want|need|"
    r"work as|worked as|am|was|is|are)\s+((?:a|an|the|some|my|two|three|\d+)?\s*[\w'-]+(?:\s+[\w'-]+){0,3}?)"
    r"(?=\s+(?:at|in|on|from|near|under|by|with|because|when|that|which|and|but|for)\b|[,.!?;]|$)",
    re.I,
)
# Contractions typed without their apostrophe ("im Greta", "whats my name"): read as if it were there. Only
# spellings that are no other word ("id", "ill", "were" are left alone).
BARE_CONTRACTIONS = {
    "im": "I'm", "ive": "I've", "whats": "what's", "wheres": "where's", "whos": "who's", "dont": "don't",
    "didnt": "didn't", "cant": "can't", "youre": "you're", "doesnt": "doesn't", "isnt": "isn't", "thats": "that's",
    "hows": "how's", "wasnt": "wasn't",
}  # fmt: skip
BARE_CONTRACTION = re.compile(rf"\b(?i:{'|'.join(BARE_CONTRACTIONS)})\b")
# Past forms a suffix does not undo, each with the stem its present has: a question asks "what did I lose?"
# of a player who said "I lost".
IRREGULAR = {
    "lost": "lose", "found": "find", "saw": "see", "seen": "see", "hid": "hide", "hidden": "hide", "bought": "buy",
    "told": "tell", "kept": "keep", "made": "make", "ate": "eat", "eaten": "eat", "drank": "drink", "met": "meet",
    "left": "leave", "took": "take", "taken": "take", "gave": "give", "given": "give", "stole": "steal",
    "stolen": "steal", "sold": "sell", "wrote": "write", "written": "write", "came": "come", "grew": "grow",
    "grown": "grow", "went": "go", "gone": "go", "brought": "bring", "caught": "catch", "held": "hold",
    "sent": "send", "spent": "spend", "built": "build", "forgot": "forget", "wore": "wear", "rode": "ride",
    "drove": "drive", "flew": "fly", "fell": "fall", "ran": "run", "swam": "swim", "won": "win", "paid": "pay",
    "buried": "bury", "born": "bear",
}  # fmt: skip
LEADING_INTERJECTION = re.compile(
    r"^\s*(?:oh|well|so|hi|hello|hey|anyway|by the way|also|ugh|um|uh|ok|okay|right|and)\b[,!]?\s*", re.I
)
OWN_NAME = re.compile(
    r"\bmy\s+(?:own\s+)?name\b|\bwho (?:am i|i am)(?=\s*(?:[?.!,]|$|then\b|again\b|to you\b|really\b))|"
    r"\bwhat (?:am i|i'm|i am) (?:(?:actually|really|truly|properly) )?called\b|\bcall me\b|"
    r"\bwhat\b.*\bi (?:was|am|'m) (?:called|named)\b|"
    r"\bwho (?:you're|you are|you've been|you have been) (?:talking|speaking|chatting) (?:to|with)\b|"
    r"\b(?:remember|know|recognise|recognize) me\b",
    re.I,
)
# Asked for the name the character will give, call or write for the player ("what name will you give them?",
# "your visitor's name"): the player's own name unless the question names something of theirs that the name may
# be of ("if somebody spotted my boat, what name would they call out?") and not the player too ("if my friends
# come looking for me, which name should they ask for?"). "Whose name" asks for a person's, so a thing of the
# player's in the question is where it is written ("whose name goes on my lantern?").
WHOSE_NAME = re.compile(r"\bwhose\s+(?:name|company)\b", re.I)
NAME_GIVEN = re.compile(
    r"\bvisitor'?s\s+name\b|\bwho\s+(?:will|would|should)\s+you\s+say\b|"
    r"\b(?:what|which)\s+name\s+(?:will|would|should|shall|must|might|do|are|is|goes|gets)\b"
    r"(?!\s+(?:my|our|his|her|their|its|the|that|this)\b)|"
    r"\bwhat\s+(?:will|would|are)\s+you\s+(?:gonna\s+|going\s+to\s+)?(?:call|shout)\b(?!\s+(?:my|our|his|her|the)\b)",
    re.I,
)
THE_PLAYER_AS_OBJECT = re.compile(r"\bme\b", re.I)
# The question words, as typed: "who'll" and "wat" ask as "who" and "what" do.
QUESTION_WORDS = {
    "what": "what", "what's": "what", "whats": "what", "wat": "what", "who": "who", "who's": "who", "who'll": "who",
    "who'd": "who", "whom": "who", "whose": "who", "where": "where", "where's": "where", "where'd": "where",
    "which": "which", "why": "why", "when": "when", "how": "how",
}  # fmt: skip
QUESTION_WORD_BASES = frozenset(QUESTION_WORDS.values())
# What a player asks of their own plans or permission ("what should I call you", "where can I sleep", "how do
# I get up there") is no question about what they are or told; "how many" and "how old" are.
ASKS_FOR_ADVICE = re.compile(
    r"\b(?:should|shall|must|ought|can|could|may|might)\s+i\b|^how\b(?!\s+(?:many|much|old|long)\b)", re.I
)
# What is the player's: "what could I pull out of my pocket?" asks what they have, not what they should do.
OWN_THINGS = re.compile(r"\b(?:my|mine|me|myself)\b", re.I)
# "Why might I be the one to…", "why would I be first out the door": a question about what the player is.
OWN_ROLE = re.compile(r"\bwhy\s+(?:might|would|could|should|will|am|do)\s+i\b", re.I)
# One thing that happened: a past verb after the player or anyone, or a time that was.
PAST_NARRATION = re.compile(
    rf"\b(?i:i|we|he|she|they|you|someone|somebody|everyone)\s+(?:\w+ly\s+)?(?i:was|were|did|had|got|"
    rf"{'|'.join(IRREGULAR)}|(?!need|feed|breed|speed|bleed|seed|weed)\w+ed)\b|"
    rf"\b[A-Z][a-z]+\s+(?:{'|'.join(IRREGULAR)}|(?!need|feed|breed|speed|bleed|seed|weed)[a-z]+ed)\b(?!\s+(?:to|of)\b)|"
    r"\b(?i:yesterday|this morning|last night|earlier|on the way|today|just now)\b"
)
# Words by which the player turns to the listener before telling: "I should warn you,", "to be honest,".
ADDRESSING_FRAME = re.compile(
    r"^(?:(?:and|but|oh|so)\s+)?(?:i\s+(?:should|must|have to|'d better|ought to|gotta|need to)\s+(?:warn|tell|"
    r"confess to|admit to|say to)\s+you|(?:to be honest|honestly|truth be told|fair warning|just so you know|"
    r"i'll be honest|i won't lie))\s*[,:;—-]+\s*",
    re.I,
)
# A question that asks for a fact by what it would mean: "If you cook for me, what should stay off my plate?"
# A sentence that sets up the question to come: "Suppose you wanted to pay me a visit. Which town…?"
SETTING_UP = re.compile(r"^\W*(?:suppose|supposing|say|imagine|picture|let's say|if)\b", re.I)
PUT_AS_SUPPOSITION = re.compile(
    r"\b(?:if|would|wouldn't|should|shouldn't|could|might|will|won't|must|mustn't|better|gonna)\b|'d\b|'ll\b", re.I
)
# "Tell me about the fishing boats", "show me the lamp": the player asks for something, and is not what is asked.
# Only a request the line opens with: "…and you write to tell me so, which town goes on the envelope?" asks
# about the player.
REQUEST_FRAME = re.compile(
    r"^\W*(?:(?:so|and|now|please|go on|then|oh|well|can you|could you|would you|will you)\W+)*"
    r"(?:tell|show|give|teach|let|help|take|bring|lend)\s+me\b",
    re.I,
)
# What the player perceives names what the question is about, not the player: "What is that ticking sound I
# hear?", "Who is the guardian I've heard about?" ("which bird did I say I saw?" still asks what they said).
PERCEIVED = re.compile(
    r"\b(?:that |which |who )?i(?:'ve| have| can| could)?\s+(?:hear|heard|see|saw|seen|notice|noticed|smell|smelt|"
    r"smelled|spot|spotted)\b",
    re.I,
)
# The player hedging a question about the world ("mostly fish, I'd guess?") says nothing of themselves.
HEDGE = re.compile(
    r"\b(?:i'd (?:guess|say|imagine|think)|i (?:guess|think|suppose|reckon|bet|imagine|expect|wonder)|i'm (?:guessing|"
    r"sure|betting|thinking))\b",
    re.I,
)
# A yes-or-no question about the world in which the player appears only as who acts: "Is that a kettle I can
# smell?", "could you light one up so I can see it?" ask nothing the player told ("am I…", "did I…" do).
ASKS_OF_THE_WORLD = re.compile(
    r"^\W*(?:(?:so|and|but|oh|well)\W+)?(?:is|are|was|were|could|would|can|will|should|shall|has|have|does)\b"
    r"(?!.*\b(?:remember|recall|forgot|forget|remind)\b)",
    re.I,
)
# A question that asks the character to remember something, with or without "my" or "I": what it remembers
# of this player is what the player told it.
ASKS_TO_REMEMBER = re.compile(r"\b(?:remember|recall|forgot|forget|forgotten|remind)\b", re.I)
# Where a question mixed into an action or a ramble begins: "I pick up a stone and ask, what is my cat called?"
QUESTION_START = re.compile(
    r"\b(?:what|what's|who|who's|whom|where|where's|where'd|when|which|how)\b|\b(?:do|did|can|could) you\b", re.I
)
# What follows the question and only explains it: "…, because I have been walking all day".
RAMBLE = re.compile(r"\s*(?:,|\s)\s*(?:because|since|cause|cos|as i|i mean|like i said)\b.*$", re.I)
# Where one clause of a sentence ends and another begins: "…called Pickle, and I came over…", "Mum's name is
# Delphine and she'll be worrying…", "My name's Tomasz, nice to meet you".
CLAUSE_BREAK = re.compile(
    r"\s*[;,:]\s*(?:and|but|so|though)?\s*|\s+(?:and|but|so)\s+(?=(?:i|i'm|i've|i'd|my|she|he|they|we|it)\b)", re.I
)
CLAUSE_SUBJECT = re.compile(r"^(?:i|i'm|i've|i'd|my|mum's|dad's|[A-Z][a-z]+'s)\b", re.I)
# The player speaking of themselves ("I keep bees", "Biscuit is my dog's name", "Thunder frightens me").
# "Came all the way from Wendlebury.": a player telling of themselves often leaves the "I" out.
WITHOUT_SUBJECT = re.compile(
    r"^\W*(?:came|come|coming|live|lived|grew|moved|born|raised|work|worked|travelled|traveled|arrived|walked|"
    r"sailed|rowed|rode|drove|flew|cycled|hitched)\b",
    re.I,
)
SELF_WORD = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|mine|me|myself)\b", re.I)
# What the player has is theirs as much as what they call "my": "I've got a dog" makes "my dog" an anchor.
POSSESSION = re.compile(
    r"\bi(?:'ve| have)?\s+(?:got|have|own|keep|had|kept|raise)\s+(?:a|an|some|two|three|four|five|\d+|\w+ly)?\s*"
    r"([a-z']+)(?:\s+([a-z']+))?",
    re.I,
)


@dataclass(frozen=True)
class RecollectionConfig:
    """How strongly each signal counts and when a sentence answers at all."""

    # The MiniLM cosine of the question to each sentence orders the player's few facts; these add to it.
    # Topic words shared and "my brother" in both are what a person checks first.
    overlap_weight: float = 0.5
    anchor_weight: float = 0.5
    kind_weight: float = 0.3
    # A sentence the player said of themselves ("I've got a dog…") over one about the world ("A dog called
    # Rufus sleeps by the inn"): the question asks what the player told of themselves.
    self_weight: float = 0.3
    # A sentence that tells the kind of fact the question asks for ("I'm allergic to honey" to "what should
    # stay off my plate?", inference.narrative.player_facts) answers it however far apart their embeddings.
    fact_weight: float = 0.5
    # Without a shared topic word or anchor, a sentence must be this close to the question to answer it, or
    # `min_cosine_typed` when it holds the very kind of span the question wants (a name, a place, a number).
    # Tuning facts score 0.3-0.8 to questions a reader links to them, the filler beside them 0.15-0.45.
    min_cosine_alone: float = 0.35
    min_cosine_typed: float = 0.25
    # "Do you remember the storm?" names nothing of the player's: one of their sentences answers it only when
    # it is about the same thing.
    min_cosine_remembered: float = 0.5
    # A question about the player that asks for a fact by what it is for ("why would I be first out the door
    # if something buzzed in the eaves?") shares no word with the fact and holds no span a rule can type, yet
    # the player's own sentence nearest to it in meaning is usually the one meant: it answers a question put
    # with a question word and as a supposition ("if", "would", "should") when no other of the player's
    # sentences is nearer and it is at least this near. A plain question ("what did I have for breakfast?")
    # names what it asks for, and a yes-or-no question ("Did I put my foot in it?") rarely asks for what the
    # player told; neither is answered by whatever the player said nearest to it.
    min_cosine_nearest_own: float = 0.2
    # Such a question asks what the player is, keeps or cannot abide, which they tell in the present ("I keep
    # bees", "Hornets scare me"), not one thing that happened on the way ("I bought a scarf from a weaver").
    lasting_weight: float = 0.1
    # A sentence that neither names the same thing of the player's as the question ("my brother") nor tells
    # the kind of fact it asks for answers it only when it stands out from the rest of what was recalled: its
    # cosine at least this many standard deviations above the mean of the other sentences'. Asked something
    # the player never told, the best of the rest is often a name or a place that only happens to fit the
    # question's form, no nearer than the others ("Where did I lose the compass?" -> "It's coming from the
    # east now."); a fact that answers it is usually far ahead of them.
    min_standing_out: float = 1.25
    # Where no rule finds the answer, the player's own sentence nearest the question is said back whole when it
    # stands out this far.
    min_standing_out_alone: float = 3.0
    # Fewer other sentences than this say too little about how near the rest are: the sentence is not judged so.
    min_sentences_for_standing_out: int = 4


@dataclass(frozen=True)
class Recollection:
    """The player's sentence that answers a question, its answer span, and how the character says it."""

    sentence: str  # the player's words, as remembered
    answer: str  # the span that answers the question ("Marco", "Tarsk", "a silver key")
    statement: str  # said to the player: "Your brother is called Marco."


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def normalised(text: str) -> str:
    """`text` with contractions typed without their apostrophe written out: "im Greta" -> "I'm Greta"."""
    return BARE_CONTRACTION.sub(lambda found: BARE_CONTRACTIONS[found.group().lower()], text)


def question_asked(text: str) -> str:
    """The question itself in a line that mixes it with an action or a ramble: "I pick up a stone and ask,
    what is my cat called?" -> "what is my cat called?"; a line that is all question stays as it is."""
    text = normalised(text).strip()
    asked = [match.group().strip() for match in SENTENCE.finditer(text) if match.group().strip().endswith("?")]
    # "my bird. name. you know it?": a question mark after words that say nothing ends the whole line's question.
    question = asked[-1] if asked and set(words(asked[-1])) - STOP_WORDS else text
    start = QUESTION_START.search(question)
    # Only what the player does or says of themselves comes before the question; "And her name, do you
    # remember it?" is one question throughout.
    before = question[: start.start()] if start is not None else ""
    # Without a question mark, only a line that says it asks holds a question ("…and ask, what is my cat
    # called"): "she's the one who nagged me" is told.
    asking = re.search(r"\b(?:ask|asks|asking|wonder)\b", before, re.I) or (asked and question.endswith("?"))
    if asking and re.search(r"[,:;]|\band\b", before) and re.search(r"\b(?:i|i'm|ask|asks|asking)\b", before, re.I):
        question = question[len(before) :]
    return RAMBLE.sub("", question).strip() or question


def question_sentence(text: str) -> str:
    """The whole sentence that holds the line's question, with the clause before its question word: "So the
    lamp's out? I can't see a thing." -> "So the lamp's out?"."""
    asked = [match.group().strip() for match in SENTENCE.finditer(text) if match.group().strip().endswith("?")]
    return asked[-1] if asked else text


def stem(word: str) -> str:
    """A crude stem, enough that "sisters" meets "sister", "sailing" meets "sail" and "lost" meets "lose"."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    for suffix in ("'s", "ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def is_question(text: str) -> bool:
    """A question by its mark or its opening, after an interjection ("so who am i then")."""
    return reads_as_question(normalised(text).strip(), question_asked(text))


def reads_as_question(line: str, asked: str) -> bool:
    """Whether a normalised line, or the question cut out of it (`question_asked`), is put as a question."""
    return any(QUESTION_FORM.search(LEADING_INTERJECTION.sub("", candidate)) for candidate in (line, asked))


def asks_about_the_player(question: str, previous: str = "") -> bool:
    """A question about what the player is, has, did or knows ("What was my brother called?", "Do you even
    remember who you're talking to?"), or about someone of theirs that the player's previous line
    (`previous`) named ("And her name?").

    The player may be named only in the clause before the question word: "If I went missing out here, where
    would you send word?"; a sentence before or after the question ("I'm sorry. What was your brother like?")
    does not make it about the player."""
    question = normalised(question)
    asked = question_asked(question)
    # "What should I call you?" asks for advice; "what could I pull out of my pocket?" and "why might I be the
    # one to mend it?" ask what the player has or is.
    # Only the clause that asks: "My hands are numb; may I warm them by your stove?" asks leave.
    asking_clause = re.split(r"[;,:]", asked)[-1] if ASKS_FOR_ADVICE.search(asked) else asked
    advice = (
        ASKS_FOR_ADVICE.search(asking_clause)
        and not OWN_THINGS.search(asking_clause)
        and not OWN_ROLE.search(asking_clause)
    )
    if not reads_as_question(question.strip(), asked) or advice:
        return False
    if ASKS_OF_THE_WORLD.search(asked) and not OWN_THINGS.search(asked):
        return False
    return (
        bool(
            ABOUT_THE_PLAYER.search(
                PERCEIVED.sub("", REQUEST_FRAME.sub("", HEDGE.sub("", question_sentence(question))))
            )
        )
        or bool(OWN_NAME.search(question))
        or asks_own_name(asked)
        or set_up_about_the_player(question)
        or (bool(SOMEONE_MENTIONED.search(question)) and bool(anchors_of(previous)))
    )


def set_up_about_the_player(line: str) -> bool:
    """Whether a sentence before the line's question sets it up about the player: "Suppose you wanted to pay
    me a visit once the weather clears. Which town would you tell the driver?" ("I'm sorry. What was your
    brother like?" is no such set-up)."""
    sentences = [match.group().strip() for match in SENTENCE.finditer(line) if match.group().strip()]
    before = sentences[: max(len(sentences) - 1, 0)]
    return any(SETTING_UP.search(sentence) and ABOUT_THE_PLAYER.search(sentence) for sentence in before)


def asks_own_name(question: str) -> bool:
    """Whether the question asks for the player's own name, directly ("what's my name?", "who am I?") or as the
    name the character will give them by ("what name will you put in your log?")."""
    return bool(OWN_NAME.search(question) or WHOSE_NAME.search(question)) or bool(
        NAME_GIVEN.search(question) and (not anchors_of(question) or THE_PLAYER_AS_OBJECT.search(question))
    )


def asks_to_remember(question: str) -> bool:
    """A question that asks the character what it remembers ("Do you remember the dog's name?"): answered
    from what the player told when a sentence of theirs answers it, else like any other question."""
    return is_question(question) and bool(ASKS_TO_REMEMBER.search(question))


def answer_kind(question: str) -> str:
    """What the question's own question word asks for; a clause after it ("when I can't sleep") does not count.
    The question word decides first: "who hauls my vegetables into town?" wants a person, not a town, and "how
    many little ones call me granny?" a number, not a name."""
    asked = [QUESTION_WORDS.get(word, word) for word in words(question)]
    leading_words = [word for word in asked if word in QUESTION_WORD_BASES]
    # "When I knock at your door, who will you say has come?": the first "when" opens a clause, not the question.
    leading = (
        leading_words[1] if leading_words[:1] == ["when"] and len(leading_words) > 1 else next(iter(leading_words), "")
    )
    following = set(asked[asked.index(leading) + 1 :][:3]) if leading else set()
    names_asked = bool(set(asked) & (NAME_WORDS - {"who", "whom"}))
    place_asked = bool(set(asked) & {"town", "city", "village", "country", "stop", "station"}) or bool(
        COMES_FROM.search(question)
    )
    if leading == "where":
        return PLACE
    if leading == "when" or (leading in ("how", "what") and following & NUMBER_WORDS):
        return NUMBER
    if leading == "why":
        return THING
    if names_asked:
        return NAME
    if leading in ("who", "whom"):
        return PERSON
    if place_asked:
        return PLACE
    return THING


def topic_of(question: str) -> set[str]:
    asked = {word for word in words(question) if word not in STOP_WORDS | NAME_WORDS | PLACE_WORDS | NUMBER_WORDS}
    return {stem(related) for word in asked for related in {word, *RELATED_WORDS.get(word, ())}}


def anchors_of(text: str) -> set[str]:
    """What the text says is the player's: "my brother" and "my old boat" give {"brother"} and {"old", "boat"},
    "I've got a dog" gives {"dog"}."""
    found = re.findall(r"\b(?:my|mine|our)\s+([a-z']+)(?:\s+([a-z']+))?", text.lower())
    found += POSSESSION.findall(text.lower())
    named = {word for pair in found for word in pair if word and word not in STOP_WORDS}
    return {stem(kin) for word in named for kin in {word, *SAME_PERSON.get(word, ())}}


def said_of_self(sentence: str) -> bool:
    """Whether the player speaks of themselves in the sentence, not only of the world around them."""
    return bool(SELF_WORD.search(sentence) or WITHOUT_SUBJECT.search(sentence) or tells_own_name(sentence))


def lasting(sentence: str) -> bool:
    """Whether the sentence tells how things stand rather than one thing that happened: "I keep a goat", "Hornets
    scare me", not "I bought a scarf this morning" or "A girl showed me a shell"."""
    return not PAST_NARRATION.search(sentence)


def answer_span(sentence: str, kind: str, from_where: bool = False) -> str:
    """The span of `sentence` that answers a question wanting `kind`; "" when it holds none. `from_where`: the
    question asks where the player comes from, which a place after "from" answers first."""
    if kind == NAME:
        if found := NAME_AFTER.search(sentence) or NAME_BEFORE.search(sentence):
            return found.group(1)
        names = [match for match in CAPITALISED.findall(sentence[1:]) if match.split()[0] not in {"I", "I'm"}]
        return names[0] if names else ""
    if kind == PLACE:
        if from_where and (found := HOME_PLACE.search(sentence)):
            return found.group(1)
        if found := PLACE_AFTER.search(sentence):
            return found.group(1)
        if from_where:
            return ""  # where one comes from is a named place: "in my cloak" is no answer
        found = PLACE_PHRASE.search(sentence)
        return found.group(1) if found else ""
    if kind == NUMBER:
        found = NUMBER_SPAN.search(sentence)
        return found.group(1) if found else ""
    if kind == PERSON:
        return answer_span(sentence, NAME) or answer_span(sentence, THING)
    found = THING_AFTER_VERB.search(sentence)
    return found.group(1).strip() if found else ""


def sentences_of(memories: Sequence[str]) -> list[str]:
    """Every sentence of the memories once, in order: a summary's sentences are its sources' sentences."""
    seen: dict[str, str] = {}
    for memory in memories:
        joined: list[str] = []
        for match in SENTENCE.finditer(normalised(memory)):
            sentence = LEADING_INTERJECTION.sub("", match.group().strip()).strip()
            if joined and PRONOUN_START.match(sentence):
                joined[-1] = f"{joined[-1]} {sentence}"  # "She" still needs the sentence that says who
            elif len(sentence.split()) >= 2:
                joined.append(sentence)
        for sentence in joined:
            sentence = sentence[:1].upper() + sentence[1:]
            seen.setdefault(" ".join(words(sentence)), sentence if sentence[-1] in ".!?" else sentence + ".")
    return list(seen.values())


def statement_of(sentence: str, answer: str, question: str, kind: str) -> str:
    if kind == NAME and asks_own_name(question):
        return f"Your name is {answer}."
    # A thing's span is a guess at its noun phrase ("them" in "my gran made them"); a name, a place or a number
    # is the answer itself, and its clause says it.
    said = sentence if kind == THING else clause_with(sentence, answer)
    if WITHOUT_SUBJECT.match(said):
        said = f"I {said.lstrip()[:1].lower()}{said.lstrip()[1:]}"  # said back as "You came all the way from …"
    # "I should warn you, I panic in cellars" said back is "You panic in cellars", not "You should warn me, …".
    unframed = ADDRESSING_FRAME.sub("", said)
    return to_second_person(unframed[:1].upper() + unframed[1:] if unframed else said)


def clause_with(sentence: str, answer: str) -> str:
    """The clause of `sentence` that holds `answer`, as a sentence of its own: asked for the dog's name, "I've
    got a terrier called Pickle, and I came over from Kraków." is answered by its first clause alone, which
    says the answer without saying back the whole line. The sentence itself when no clause of it stands alone."""
    clauses = [clause.strip() for clause in CLAUSE_BREAK.split(sentence.rstrip(".!?")) if clause.strip()]
    holding = [clause for clause in clauses if answer and answer in clause and len(clause.split()) >= 3]
    if len(clauses) < 2 or not holding or not CLAUSE_SUBJECT.match(holding[0]):
        return sentence
    clause = holding[0]
    return f"{clause[:1].upper()}{clause[1:]}."


def recollect(
    question: str,
    question_embedding: np.ndarray,
    memories: Sequence[str],
    embedder: Embedder,
    config: RecollectionConfig | None = None,
    previous: str = "",
) -> Recollection | None:
    """The recalled sentence that answers `question` (embedded as (D,)), or None when none does; `previous` is
    the player's line before it, which says whom a pronoun in the question means."""
    config = config or RecollectionConfig()
    about_the_player = asks_about_the_player(question, previous)
    # "who's snoozing under a heat lamp back home?" names nothing of the player's, yet one of their sentences
    # may say who, very near it in meaning: only such a sentence answers it.
    near_only = not (about_the_player or asks_to_remember(question))
    if not memories or (near_only and not is_question(question)):
        return None
    candidates = sentences_of(memories)
    if not candidates:
        return None
    asked = question_asked(question)
    if asked != question.strip():
        question_embedding = embedder.embed([asked])[0]  # (D,): the question without the action around it
    kind = answer_kind(asked)
    topic = topic_of(asked)
    anchors = anchors_of(asked) or (anchors_of(previous) if SOMEONE_MENTIONED.search(asked) else set())
    own_name_asked = asks_own_name(asked)  # "which name will you give him?": "him" is not whose name
    if (
        SOMEONE_MENTIONED.search(asked)
        and not anchors
        and not own_name_asked
        and not ABOUT_THE_PLAYER.search(question_sentence(question))
    ):
        return None  # "And her name?" with no one of the player's named before: whose name is not known
    cosines = embedder.embed(candidates) @ question_embedding  # (S,)
    best: tuple[float, Recollection, int, bool] | None = None  # (score, answer, its candidate, vouched for)
    from_where = kind == PLACE and bool(ASKS_FOR_HOME.search(asked))
    facts_asked = kinds_asked(asked) if about_the_player else set()
    if kind == PLACE:
        # "Which stop will I be asking for?" wants a place, not the name to ask for; "where would you write to
        # me?" the player's home, not the cousin they write to.
        facts_asked &= {HOME_FACT}
    elif re.search(r"\bwhy\b", asked, re.I):
        facts_asked.discard(NAME_FACT)  # "why should you give me a shout?" wants a reason, not what to shout
    own_name = own_name_asked or (NAME_FACT in facts_asked and not anchors)
    if own_name:
        kind = NAME  # "who am I?" and "who you're talking to" want the player's name, not a description
    alone = config.min_cosine_alone if about_the_player else config.min_cosine_remembered
    supposing = (
        about_the_player and bool(set(words(asked)) & set(QUESTION_WORDS)) and bool(PUT_AS_SUPPOSITION.search(question))
    )
    own = [said_of_self(sentence) for sentence in candidates]
    # (S,): how near each of the player's own sentences is to a supposing question, lasting facts first
    lasting_own = np.array([mine and lasting(sentence) for sentence, mine in zip(candidates, own, strict=True)])
    nearness = cosines + config.lasting_weight * lasting_own
    nearest_own = max((near for near, mine in zip(nearness.tolist(), own, strict=True) if mine), default=1.0)
    for index, (sentence, cosine, near, own_words, lasting_fact) in enumerate(
        zip(candidates, cosines.tolist(), nearness.tolist(), own, lasting_own.tolist(), strict=True)
    ):
        answer = answer_span(sentence, kind, from_where)
        if not answer and kind != THING:
            continue
        stems = {stem(word) for word in words(sentence)}
        overlap = min(len(topic & stems), 2) / 2 if topic else 0.0
        anchored = bool(anchors & anchors_of(sentence))
        told = kinds_told(sentence)
        if own_name and not (anchored or NAME_FACT in told):
            continue  # "what's my name" wants the player's own name, not any name they mentioned
        if kind == NAME and not own_name and NAME_FACT in told and not anchored:
            continue  # nor does "what name does my dog answer to?" want the player's own
        if anchors and not anchored and not own_words:
            continue  # "what's my dog called" is not answered by "A dog called Rufus sleeps by the inn"
        # "Where did I say I came from?" is answered by any place after "from", and else by where the player
        # says they live or work ("over in Saltcombe").
        came_from = from_where and bool(HOME_PLACE.search(sentence))
        fact = bool(facts_asked & told) and (own_words or NAME_FACT in told)
        typed = bool(answer) and (
            came_from or (kind in (NAME, PLACE, NUMBER, PERSON) and cosine >= config.min_cosine_typed)
        )
        if near_only and not (own_words and answer and kind in (NAME, PERSON) and cosine >= alone):
            continue
        nearest = supposing and own_words and near >= nearest_own and cosine >= config.min_cosine_nearest_own
        if not (anchored or own_name or typed or fact or nearest or overlap > 0 or cosine >= alone):
            continue
        score = (
            cosine
            + config.overlap_weight * overlap
            + config.anchor_weight * anchored
            + config.kind_weight * bool(answer)
            + config.self_weight * own_words
            + config.kind_weight * came_from
            + config.fact_weight * fact
            + config.lasting_weight * (supposing and lasting_fact)
        )
        if best is None or score > best[0]:
            statement = statement_of(sentence, answer, asked, kind)
            recollection = Recollection(sentence=sentence, answer=answer or sentence, statement=statement)
            best = (score, recollection, index, anchored or own_name or fact)
    if best is not None:
        _, recollection, chosen, vouched_for = best
        if vouched_for or stands_out(chosen, cosines, config.min_standing_out, config, unjudged=True):
            return recollection
    if near_only or not any(own):
        return None
    # No rule found the answer, yet one of the player's own sentences may be far nearer the question than
    # anything else they said ("I tune church organs for a living" to "why would the vicar send for me?"):
    # that one is said back whole.
    nearest = max((index for index, mine in enumerate(own) if mine), key=lambda index: cosines[index])
    if not stands_out(nearest, cosines, config.min_standing_out_alone, config, unjudged=False):
        return None
    sentence = candidates[nearest]
    statement = statement_of(sentence, "", asked, THING)
    return Recollection(sentence=sentence, answer=sentence, statement=statement)


def stands_out(
    candidate: int, cosines: np.ndarray, deviations: float, config: RecollectionConfig, *, unjudged: bool
) -> bool:
    """Whether the `candidate`'s cosine is at least `deviations` standard deviations above the other
    candidates' mean (`cosines`, (S,)); `unjudged` when too few others say how near the rest are."""
    cosine = float(cosines[candidate])
    others = np.delete(cosines, candidate)  # (S - 1,)
    if len(others) < config.min_sentences_for_standing_out:
        return unjudged
    spread = float(others.std())
    return spread == 0.0 or (cosine - float(others.mean())) / spread >= deviations


def introduced_name(line: str) -> str:
    """The name the player gives themselves in `line` when the line tells it and asks nothing ("Good evening,
    Eve! My name is Tobiah, and I'm a clockmaker." -> "Tobiah"); "" otherwise."""
    if is_question(line):
        return ""
    return name_given_in(memory.text for memory in extract_memories(line, turn=0))


def name_told(lines: Sequence[str], memories: Sequence[str]) -> str:
    """The name the player last told the character they go by: in their `lines` (the talk a session keeps,
    oldest first), else in the recalled `memories`; "" when they told none. The account's name is what the
    platform knows them by, not what they asked to be called ("ignore the username, I'm Marisol")."""
    for line in reversed(lines):
        if name := introduced_name(line):
            return name
    return name_given_in(sentences_of(memories))


def name_given_in(sentences: Iterable[str]) -> str:
    """The name the first of `sentences` that names the player gives them ("Name's Rowena." -> "Rowena")."""
    for sentence in sentences:
        if tells_own_name(sentence) and (name := answer_span(sentence, NAME)):
            return name
    return ""
