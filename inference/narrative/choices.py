"""A beat's choices written live: each authored choice is rewritten for the scene, so it leads where it led.

A choice is written FOR its destination. Sampling free actions and then guessing where each leads (by its
likeness to the authored choices) sends choices to places they never spoke of; so the model rewrites one
authored choice at a time, told the scene, the choice and the scene it leads to (the destination beat's), so
where the rewrite leads is known by construction. A rewrite that fails the checks below gives way to its
authored choice's own text, which leads to the same place; a rewrite that only repeats it does not count as
written.

SmolLM2-135M asked for a list of choices writes headings and nonsense; it does far better at continuing one
short reply after a worked example (a few-shot prompt). The reply is seeded with the authored choice's verb
and, when one follows, its article or particle ("Force the", "Hide behind"): the model then writes what the
verb acts on instead of starting a sentence of its own. The candidates for one destination are sampled as
one batch; the backends batch one prompt at a time, so a beat costs one short batch per destination, with
few tokens and a scene cut to its first sentences, because the player waits for them. The worked examples
draw their rewrites from the destination's words; of the rewrites that pass, the one that reads most clearly
like its own destination (over the nearest other), and that the model finds most fluent, is offered first.

What a person accepts as a pair (`pair_problems`, which the evaluation's choice_pair_pass_rate also calls):

- each an imperative a player could do here: it opens with a verb from `PLAYER_VERBS`, or one the beat's
  creator opened a choice with ("Prise the lid off"; an adverb such as "quietly" may come first), that keeps
  its object ("Free to the wolf" lost it), is 2 to 10 words, one plain command (no question, markup, digits,
  clauses after a comma, heading case or "is"), and whole: it does not end mid-phrase or run an article, or
  its adjectives, into a small word ("the upper to the old city");
- it speaks to the player, not as someone ("I", "you"), and uses no words from outside the world (game,
  tournament, player, option, choice, story...);
- about this beat: cosine to the scene and its destination at least `min_relevance`, it acts on something
  the beat mentions, and names no one the beat does not;
- faithful: closer to its own destination (the authored choice and the scene it leads to) than to the
  other choices' destinations;
- the two clearly different: cosine below `max_pair_similarity`, and a different verb or a different object.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inference.language.base import GenerationSettings, LanguageModel, Message
from inference.language.embedding import Embedder

# Base forms of what a player can do in a scene. Abstract verbs ("navigate", "decide", "consider", "do",
# "make") are left out on purpose: "Navigate the game of this tournament" reads as an action but is none.
PLAYER_VERBS = frozenset(
    """
accept accuse aim approach argue ascend ask attack avoid back bang bargain bark bathe beg bind bite blow board
bolt borrow bow break bribe bring burn bury buy call calm carry catch challenge charge chase check cheer
chop clean climb close collect comfort confront cook count cover crawl creep cross crouch cut dance dash
defend deliver demand descend dig dismount dive dodge drag draw drink drive drop duck eat embrace enter
escape examine feed fetch fight fill find fish flee float follow force free gather give glance go grab
grasp greet guard guide haggle hand head help hide hike hit hold hop hug hunt hurry ignore inspect jump keep
kick kiss kneel knock land lead leap leave lie lift light listen load lock look loosen lower march meet
mend mount move offer open order paddle pay peek peer persuade pick plead plunge point poke pour pray
press promise propose protect pull push race raise reach read refuse release repair rescue rest return ride ring
row run rush sail salute save say scale scramble scream search seize sell set shake share shift shoot
shout show signal sing sit slash sleep slip sneak speak splash spy stand stay steal steer step stop
strike study swim swing take talk taste tell thank threaten throw tie toast touch trace track trade
trust try turn unlock untie wade wait wake walk warn wash watch wave whisper wipe yell
admit agree aid alert answer apologise apologize assemble bandage barricade bet block brace brew build cast
chart cheat claim clear coax conceal confess consult crack crank cure dare decline deny disarm disguise
distract douse drain dress drift empty explore face fasten feel fix flag flash flip fold forge forgive gamble
grip haul heal hire hoist hurl inform investigate invite join kindle knit laugh learn let listen loot lure
mix name negotiate nod note observe obey paint patch pause perform plant play pledge plug polish praise
prepare pretend probe prod pry pump punch question rally ram reason recall recover refill reject relax
remember remove report request resist retreat reveal rig roll rouse rub sabotage salvage scout scrub seal
send shelter shove shut sip slam slide smash smell smile sniff solve sound spend spin split sprint squeeze
stab stack stare start stash stoke stroll submit suggest surrender swap sweep tackle tap tear test toss trap
travel trick tug twist uncover unpack unroll use venture visit vote wander warm wear weigh whistle wield win
wind wrap wrestle write
""".split()
)
# Adverbs that may stand before the verb ("Quietly open the door").
MANNER = frozenset("quietly slowly carefully quickly gently boldly calmly silently cautiously swiftly".split())
# Words from outside the world: a player never meets a "game" or an "option" inside a story.
OFF_WORLD = frozenset(
    """
game games gameplay tournament tournaments player players option options choice choices story stories
narrator chapter npc prompt assistant ai user reader model sentence rewrite command click button menu
""".split()
)
# A choice ending on one of these was cut off mid-phrase.
DANGLING_END = frozenset(
    """
and or but then the a an to of with that their his her its your my our by from into onto towards toward
at on in for as so if than very some any this these those is are was be
""".split()
)
# Small words that say nothing about what a choice acts on (the rest are its object).
FUNCTION_WORDS = DANGLING_END | frozenset("it them him me you up down out over off away back all".split())
# The verbs that go straight on with "to" ("Walk to the pier"); any other ("Free to the wolf") lost its object.
VERBS_BEFORE_TO = frozenset(
    """
back bow climb crawl creep dash descend dive go hike hop hurry jump kneel leap listen march move point pray
race return ride row run rush sail scramble shout signal sing speak sneak step swim swing talk turn wade
walk wave whisper yell
""".split()
)
# Words that stay with the verb in the reply's seed ("Hide behind", "Force the"): the model then writes what
# the verb acts on, rather than a new sentence.
SEED_PARTICLES = frozenset("the a an to over behind across out back away up down into towards through".split())
ARTICLES = frozenset(("the", "a", "an"))
# Adjectives that never stand for a noun: "the upper" must go on to say the upper what.
ADJECTIVES = frozenset(
    """
old new upper lower small big large great tall high low dark bright long short little far near broken torn
rusty fallen warm cold wet dry heavy empty whole hidden narrow wide deep quiet silent wooden stone iron
""".split()
)
PREPOSITIONS = frozenset(
    """
to of with into onto towards toward at on in for from by over under behind across through past along around
near beside below above down up off
""".split()
)
# A command says what to do; these say what is ("Grab the purse is taken to the road").
STATEMENT = frozenset("is are was were".split())
# A choice speaks to the player, never as the player or about someone listening.
SPEAKERS = frozenset("i i'm i'll me my mine we us you you're".split())
# Worked examples (scene, choice, where it leads, rewrite): each rewrite takes its words from where the choice
# leads, which is what makes it belong to this beat and to no other.
EXAMPLES = (
    ("A narrow forest path splits in two beside an old well.", "Take the left path",
     "A dark hollow where wolves howl.", "Take the left path down to the dark hollow"),
    ("A dusty study with a desk and a tall bookcase.", "Search the study",
     "Under the desk you find a locked chest.", "Search the desk for a chest"),
)  # fmt: skip


@dataclass(frozen=True)
class ChoiceConfig:
    """How many rewrites to sample and what a good choice measures."""

    # Rewrites sampled per destination, as one batch. The backend reads the prompt once per row, so each row
    # costs a prompt's reading, and the player waits for the whole beat: enough rows that a rewrite passing
    # every check is usually among them (about half of a small model's rewrites fail one), no more.
    candidates_per_destination: int = 6
    min_words: int = 2
    max_words: int = 10
    # MiniLM cosine to the scene and the destination. Short commands score low against a long scene: the
    # authored "Back away slowly" scores 0.15 against its wounded wolf, so the bar sits under it; the other
    # checks catch what is off the beat in words.
    min_relevance: float = 0.12
    # Choices closer than this say the same thing twice ("Open the door" / "Open the wooden door").
    max_pair_similarity: float = 0.8
    # Rewrites are ranked by their margin towards their own destination (a cosine difference, about 0 to 0.3)
    # plus this times the model's mean log-probability per token (about -4 for fluent, -10 for nonsense).
    fluency_weight: float = 0.05
    # Scenes past this many characters are cut at a sentence end: the prompt is read before the first token,
    # and a long prompt is most of the wait.
    max_scene_characters: int = 160
    # Warm enough that the rewrites differ; 10 tokens after the seeded verb hold a short command (longer
    # rewrites run into clauses), and every token is a step the player waits for.
    settings: GenerationSettings = field(
        default_factory=lambda: GenerationSettings(temperature=0.8, max_new_tokens=10, stop=(".", "!", "\n", ";"))
    )


@dataclass(frozen=True)
class ChoiceResult:
    """The choices the player sees ({"text", "to"}), and which of them the model wrote."""

    choices: tuple[dict[str, str], ...]
    # "generated" (every choice rewritten), "mixed" (some kept their authored text) or "authored".
    source: str
    generated: tuple[bool, ...] = ()

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(choice["text"] for choice in self.choices)


def rewrite_messages(scene: str, choice: Mapping[str, str]) -> list[Message]:
    """The prompt that rewrites one authored choice for `scene`, the reply seeded with the choice's verb."""
    return [
        {"role": "system", "content": "Rewrite the story choice for the scene as one short command."},
        *(
            message
            for example_scene, text, leads_to, answer in EXAMPLES
            for message in (
                Message(role="user", content=question_for(example_scene, text, leads_to)),
                Message(role="assistant", content=f"{answer}."),
            )
        ),
        {"role": "user", "content": question_for(scene, choice["text"], choice.get("leads_to", ""))},
        {"role": "assistant", "content": reply_seed(choice["text"])},
    ]


def question_for(scene: str, text: str, leads_to: str) -> str:
    destination = f"\nLeads to: {leads_to.strip()}" if leads_to.strip() else ""
    return f"Scene: {scene.strip()}\nChoice: {text.strip()}{destination}"


def reply_seed(text: str) -> str:
    """The authored choice's verb, with the word after it when that is a particle or article."""
    words = text.split()[:2]
    if len(words) == 2 and words[1].lower() not in SEED_PARTICLES:
        words = words[:1]
    seed = " ".join(words)
    return seed[:1].upper() + seed[1:]


def shortened(scene: str, limit: int) -> str:
    """`scene` cut after the last whole sentence within `limit` characters (the first sentence at least)."""
    if len(scene) <= limit:
        return scene
    ends = [match.end() for match in re.finditer(r"[.!?](?=\s)", scene)]
    within = [end for end in ends if end <= limit]
    return scene[: (within or ends or [limit])[-1]].strip()


def option_from(seed: str, continuation: str) -> str:
    """The choice a seeded reply spells out, tidied and capitalised ("" when nothing is left)."""
    text = re.sub(r"[*_`\"]", "", f"{seed}{continuation}").split("\n")[0]
    return text.strip().rstrip(".,;:!").strip()


def words_of(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


def wording_problems(
    text: str,
    config: ChoiceConfig | None = None,
    world_words: frozenset[str] = frozenset(),
    creator_choices: Sequence[str] = (),
) -> list[str]:
    """What keeps `text` from reading as something a player could do, judged from its words alone; words of
    `OFF_WORLD` that the beat itself uses (`world_words`: "a game of dice" in a tavern) are the world's, and a
    verb the beat's creator opened a choice with (`creator_choices`: "Prise the lid off", "Appeal to the
    listeners") is one a player can do, as it was written."""
    config = config or ChoiceConfig()
    words = words_of(text)
    problems: list[str] = []
    if not config.min_words <= len(text.split()) <= config.max_words:
        problems.append(f"{len(text.split())} words, not {config.min_words} to {config.max_words}")
    if text.rstrip().endswith("?") or re.search(r"[<>:;,{}\[\]|()0-9]", text):
        problems.append("not one plain command")
    if not words:
        return [*problems, "no words"]
    verb = words[1] if words[0] in MANNER and len(words) > 1 else words[0]
    openings = [verb_and_object(choice)[0] for choice in creator_choices]
    if verb not in PLAYER_VERBS and verb not in openings:
        problems.append(f"does not open with a verb a player can do ({verb!r})")
    following = words[words.index(verb) + 1 : words.index(verb) + 2]
    if (
        following == ["to"]
        and verb not in VERBS_BEFORE_TO
        and not any(f"{verb} to" in " ".join(words_of(choice)) for choice in creator_choices)
    ):
        problems.append(f"{verb!r} has lost what it acts on")
    if off_world := sorted(set(words) & OFF_WORLD - world_words):
        problems.append(f"words from outside the world: {', '.join(off_world)}")
    if any(first == second for first, second in itertools.pairwise(words)) or broken_articles(words):
        problems.append("not a whole phrase (an article without its noun, or a word twice)")
    if set(words) & STATEMENT:
        problems.append("says what is, not what to do")
    if sum(word[:1].isupper() for word in text.split()[1:]) >= 2 or re.search(r"\s[-\u2013\u2014]\s?", text):
        problems.append("written as a heading")
    if speakers := sorted(set(words) & SPEAKERS):
        problems.append(f"speaks as someone ({', '.join(speakers)})")
    if words[-1] in DANGLING_END:
        problems.append(f"ends mid-phrase ({words[-1]!r})")
    return problems


def broken_articles(words: list[str]) -> bool:
    """Whether an article runs into a small word ("the down", "the to"), or its adjectives into one with no
    noun between ("the upper to the old city")."""
    for index, word in enumerate(words):
        if word not in ARTICLES:
            continue
        rest = list(itertools.dropwhile(lambda following: following in ADJECTIVES, words[index + 1 :]))
        if not rest or rest[0] in FUNCTION_WORDS | PREPOSITIONS:
            return True
    return False


def stem(word: str) -> str:
    """A word without its possessive or plural ending: "crates" and "crate's" are the crate."""
    return re.sub(r"(?:'s|s')$|(?<=[^s])s$", "", word)


def verb_and_object(text: str) -> tuple[str, set[str]]:
    """The opening verb of a choice and the words it acts on (its content words after the verb)."""
    words = words_of(text)
    if words and words[0] in MANNER:
        words = words[1:]
    if not words:
        return "", set()
    return words[0], {word for word in words[1:] if word not in FUNCTION_WORDS}


def destination_text(choice: Mapping[str, str]) -> str:
    """Where an authored choice leads, in words: the choice itself and the scene it leads to."""
    return f"{choice['text']}. {choice.get('leads_to', '')}".strip()


class RememberingEmbedder:
    """An embedder that embeds each text once: a beat's checks compare the same texts many times."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(text for text in texts if text not in self.vectors))
        if missing:
            self.vectors |= dict(zip(missing, self.embedder.embed(missing), strict=True))
        return np.stack([self.vectors[text] for text in texts]) if texts else np.zeros((0, 0), np.float32)


def pair_problems(
    pair: Sequence[Mapping[str, str]],
    beat: Mapping[str, Any],
    embedder: Embedder,
    config: ChoiceConfig | None = None,
) -> list[str]:
    """Every reason a person would not accept `pair` ({"text", "to"} each) as the choices of `beat`
    ({"scene", "authored": [{"text", "to", "leads_to"}]}); [] when they would."""
    config = config or ChoiceConfig()
    authored = beat.get("authored", [])
    texts = [str(beat.get("scene", "")), *(f"{option['text']} {option.get('leads_to', '')}" for option in authored)]
    world_words = frozenset(words_of(" ".join(texts)))
    creator_choices = [option["text"] for option in authored]
    problems: list[str] = []
    for choice in pair:
        found = wording_problems(choice["text"], config, world_words, creator_choices)
        found += measured_problems(choice, beat, embedder, config)
        problems += [f"{choice['text']!r}: {problem}" for problem in found]
    for first, second in itertools.combinations(pair, 2):
        found = alike(first["text"], second["text"], embedder, config)
        problems += [f"{first['text']!r} and {second['text']!r}: {problem}" for problem in found]
    return problems


def measured_problems(
    choice: Mapping[str, str], beat: Mapping[str, Any], embedder: Embedder, config: ChoiceConfig
) -> list[str]:
    """Whether one choice is about the beat and faithful to where it leads, measured by embeddings."""
    authored: list[Mapping[str, str]] = list(beat.get("authored", []))
    own = next((index for index, option in enumerate(authored) if option["to"] == choice["to"]), None)
    if own is None:
        return [f"leads to {choice['to']!r}, where no authored choice leads"]
    destinations = [destination_text(option) for option in authored]
    context = f"{beat.get('scene', '')} {authored[own].get('leads_to', '')}".strip()
    vectors = embedder.embed([choice["text"], context, *destinations])  # (2 + A, D)
    problems: list[str] = []
    known = set(words_of(" ".join([str(beat.get("scene", "")), *destinations])))
    strangers = [
        word
        for word in choice["text"].split()[1:]
        if word[:1].isupper() and words_of(word) and re.sub(r"'s$", "", words_of(word)[0]) not in known
    ]
    if strangers:
        problems.append(f"names what the beat never mentions ({', '.join(strangers)})")
    acted_on = {stem(word) for word in verb_and_object(choice["text"])[1] if not word.endswith("ly")}
    if acted_on and not acted_on & {stem(word) for word in known}:
        problems.append("acts on nothing the beat mentions")
    relevance = float(vectors[0] @ vectors[1])
    if relevance < config.min_relevance:
        problems.append(f"not about this beat (relevance {relevance:.2f} < {config.min_relevance})")
    closeness = vectors[2:] @ vectors[0]  # (A,)
    others = [index for index, option in enumerate(authored) if option["to"] != choice["to"]]
    if others and max(float(closeness[index]) for index in others) >= float(closeness[own]):
        problems.append("reads more like another choice's destination than its own")
    return problems


def alike(first: str, second: str, embedder: Embedder, config: ChoiceConfig) -> list[str]:
    problems: list[str] = []
    vectors = embedder.embed([first, second])  # (2, D)
    similarity = float(vectors[0] @ vectors[1])
    if similarity >= config.max_pair_similarity:
        problems.append(f"say the same thing (similarity {similarity:.2f})")
    (first_verb, first_object), (second_verb, second_object) = verb_and_object(first), verb_and_object(second)
    if first_verb == second_verb and (first_object & second_object or first_object == second_object):
        problems.append(f"the same verb on the same thing ({first_verb!r})")
    return problems


def sample_candidates(
    model: LanguageModel, messages: list[Message], settings: GenerationSettings, count: int
) -> list[str]:
    """`count` sampled replies: one batch where the backend offers it, otherwise one request per seed."""
    batched = getattr(model, "candidates", None)
    if callable(batched):
        return batched(messages, settings, count)
    base_seed = settings.seed if settings.seed is not None else int(np.random.default_rng().integers(1 << 31))
    return [
        "".join(model.stream(messages, dataclasses.replace(settings, seed=base_seed + offset)))
        for offset in range(count)
    ]


def rewrites_for(
    model: LanguageModel, scene: str, choice: Mapping[str, str], config: ChoiceConfig, seed: int | None
) -> list[str]:
    """The distinct rewrites of one authored choice that read as a player's action (not its own text again)."""
    messages = rewrite_messages(shortened(scene, config.max_scene_characters), choice)
    settings = dataclasses.replace(config.settings, seed=seed)
    replies = sample_candidates(model, messages, settings, config.candidates_per_destination)
    seed_word = messages[-1]["content"]
    options = [option_from(seed_word, reply) for reply in replies]
    authored = choice["text"].strip().lower()
    # Words of the worked example that this beat never uses: a rewrite with one copied the example.
    echoes = set(words_of(" ".join(" ".join(example) for example in EXAMPLES))) - FUNCTION_WORDS - PLAYER_VERBS
    beat_words = frozenset(words_of(f"{scene} {choice['text']} {choice.get('leads_to', '')}"))
    echoes -= beat_words
    kept = [
        option
        for option in options
        if option.lower() != authored
        and not set(words_of(option)) & echoes
        and not wording_problems(option, config, beat_words, [choice["text"]])
    ]
    return list(dict.fromkeys(kept))


def ranked(
    model: LanguageModel,
    texts: list[str],
    own: int,
    beat: Mapping[str, Any],
    embedder: Embedder,
    config: ChoiceConfig,
) -> list[str]:
    """`texts` (rewrites of authored choice `own`) best first: how much closer each reads to its own destination
    than to the nearest other, plus how fluent the model finds it, where the backend can say."""
    if len(texts) < 2:
        return texts
    authored = list(beat["authored"])
    vectors = embedder.embed([*texts, *(destination_text(option) for option in authored)])  # (N + A, D)
    closeness = vectors[: len(texts)] @ vectors[len(texts) :].T  # (N, A)
    others = [index for index in range(len(authored)) if index != own]
    margins = closeness[:, own] - (closeness[:, others].max(axis=1) if others else 0.0)  # (N,)
    fluency = getattr(model, "continuation_logprob", None)
    context = f"{shortened(str(beat.get('scene', '')), config.max_scene_characters)}\nYou decide:"
    scores = [
        float(margin) + (config.fluency_weight * fluency(context, text) if callable(fluency) else 0.0)
        for margin, text in zip(margins, texts, strict=True)
    ]
    return [text for _, text in sorted(zip(scores, texts, strict=True), key=lambda pair: -pair[0])]


def generate_choices(
    model: LanguageModel,
    embedder: Embedder,
    *,
    scene: str,
    guidance: str = "",
    authored: Sequence[Mapping[str, str]],
    config: ChoiceConfig | None = None,
    seed: int | None = None,
    between_choices: Callable[[], None] = lambda: None,
) -> ChoiceResult:
    """A beat's choices: each authored choice ({"text", "to", "leads_to"}) rewritten for `scene`, or kept as
    written where no rewrite passes; the offered pair passes `pair_problems` whenever a rewritten one does.
    `between_choices` is called after each choice's rewrites (the worker runs a reply a player waits on there).

    `guidance` (what the beat wants of the player) is accepted for the callers that have it; the authored
    choices already say what the player may do, and every word of prompt is time the player waits.
    """
    config = config or ChoiceConfig()
    beat = {"scene": scene, "guidance": guidance, "authored": list(authored)}
    remembering = RememberingEmbedder(embedder)
    options: list[list[tuple[str, bool]]] = []  # per destination: (text, generated), best first
    for index, choice in enumerate(authored):
        if index:
            between_choices()
        rewrites = rewrites_for(model, scene, choice, config, None if seed is None else seed * 101 + index)
        remembering.embed([*rewrites, choice["text"]])
        passing = ranked(
            model,
            [
                text
                for text in rewrites
                if not measured_problems({"text": text, "to": choice["to"]}, beat, remembering, config)
            ],
            index,
            beat,
            remembering,
            config,
        )
        options.append([(text, True) for text in passing] + [(choice["text"], False)])
    best: tuple[int, list[tuple[str, bool]]] | None = None
    for combination in itertools.product(*options):
        generated_count = sum(generated for _, generated in combination)
        if best is not None and generated_count <= best[0]:
            continue
        offered = [{"text": text, "to": choice["to"]} for (text, _), choice in zip(combination, authored, strict=True)]
        rewritten_pairs = [
            (first, second)
            for (first, second) in itertools.combinations(range(len(offered)), 2)
            if combination[first][1] or combination[second][1]
        ]
        if all(
            not alike(offered[first]["text"], offered[second]["text"], remembering, config)
            for first, second in rewritten_pairs
        ):
            best = (generated_count, list(combination))
    assert best is not None  # the all-authored combination has no rewritten pair to fail
    chosen = best[1]
    flags = tuple(generated for _, generated in chosen)
    source = "generated" if flags and all(flags) else "mixed" if any(flags) else "authored"
    choices = tuple({"text": text, "to": choice["to"]} for (text, _), choice in zip(chosen, authored, strict=True))
    return ChoiceResult(choices=choices, source=source, generated=flags)
