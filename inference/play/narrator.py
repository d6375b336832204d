"""The narrative work of a worker that takes a language model: characters' replies, a beat's choices, a hook's
outcome, the narrator's answer to a prompt that changes nothing in the world.

It runs on a thread of its own (the worker's "language" thread), so a reply that takes seconds never stalls
the world's frames. It talks to the platform through a `PlatformLink`: memories and lore come from the
platform (`recall`), finished exchanges go back to it (`session.exchange`, where memories are kept), and what
changes the session's state (the choices offered, a hook's branch) is proposed as an input that the platform
logs and forwards back to the host, so a replay after a failover never asks the model again.

Everything a player sees passes the safety filter first (inference.narrative.safety, with the world's
rating): a reply is released a sentence at a time and stops before a refused sentence; a reply refused before
anything was shown is sampled once more, then replaced; refused text is reported to the moderators.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from inference.language.base import GenerationSettings, LanguageModel, Message, complete
from inference.language.embedding import Embedder
from inference.narrative.choices import ChoiceResult, generate_choices
from inference.narrative.hooks import BranchClassifier, fallback_messages
from inference.narrative.knowledge import knowledge_sentences
from inference.narrative.memory import extract_memories
from inference.narrative.prompting import (
    CharacterPrompt,
    Fact,
    PromptConfig,
    character_prompt,
    grounding_fact,
    stream_reply,
)
from inference.narrative.recollection import (
    anchors_of,
    asks_about_the_player,
    introduced_name,
    name_told,
    recollect,
)
from inference.narrative.reply_checks import (
    ReplyContext,
    creator_lines,
    identity_stems_of,
    sentence_problems,
    sentences_of,
    world_words_of,
)
from inference.narrative.safety import refused_terms
from inference.narrative.setting import CastMember, Setting
from inference.play.state_machine import Job
from inference.protocol import (
    HookOutcome,
    Offer,
    OfferedChoice,
    OwnChoice,
    SessionBlocked,
    SessionCharacterLine,
    SessionDebugPrompt,
    SessionError,
    SessionExchange,
    SessionNarration,
    SessionPropose,
    SessionRecalled,
    ToldMemory,
    WorkerToPlatform,
)

logger = logging.getLogger(__name__)
# Texts whose embeddings a worker keeps: every sentence a few dozen characters know, many times over.
EMBEDDINGS_KEPT = 4096
SENTENCE_END = re.compile(r"[.!?…](?=\s)|\n")
# Said when the player asks about themselves, nothing recalled answers it, and every reply the model wrote
# stated something of theirs that nothing recalled holds. It claims no more than that the character cannot
# recall it: the player may have told it and the recollection missed it.
NOT_RECALLED = "I can't bring that to mind just now."


class Urgency(enum.IntEnum):
    """The order waiting work runs in on the worker's threads, the lowest first."""

    PLAYER_WAITS = 0  # a character's reply, a hook's outcome: the player watches for it
    ROUTINE = 1  # narration, and the worker's own calls
    AHEAD = 2  # a beat's choices, written while the beat is read (and interrupted for what a player waits on)
    LAST = 3  # the thread's stop


def job_urgency(job: Job) -> Urgency:
    return {"reply": Urgency.PLAYER_WAITS, "hook": Urgency.PLAYER_WAITS, "offer": Urgency.AHEAD}.get(
        job.kind, Urgency.ROUTINE
    )


class PlatformLink(Protocol):
    """How narrative work reaches the platform and the session host; callable from any thread."""

    def send(self, message: WorkerToPlatform) -> None: ...

    def recall(
        self, *, session: str, character: int | None, speaker: str | None, query: bytes, recent: list[str]
    ) -> SessionRecalled | None: ...  # None: no answer in time

    def conversation_record(self, session: str, character: str, said: str, reply: str) -> None: ...


@dataclass(frozen=True)
class NarratorConfig:
    """How the narrator samples and what it does with refused text."""

    # Replies refused before any sentence was shown are sampled again this often, then replaced by a line
    # the creator wrote; no resample starts once a reply has taken `reply_budget_seconds` in all.
    resamples: int = 2
    reply_budget_seconds: float = 12.0
    # Then sampled this often from a prompt without the talk so far, before the creator's line.
    samples_without_talk: int = 2
    # A reply is its opening: a reader cut most of the sentences the default model wrote after its first (off
    # the subject, into nonsense, or taking back what it had just said), and no embedding score told the few
    # good ones apart. An opening under `topicality_words` words keeps the sentence after it ("Most evenings.
    # It rolls in off the causeway."), and a grounded answer is shown whole however many sentences it has.
    reply_sentences: int = 1
    # MiniLM cosine from a reply's opening (its first `topicality_words` words or more) to the player's line
    # with the character's persona and the world's rules, below which the opening is about something else:
    # openings a reader calls on topic score 0.16 and up, drift such as "You're the last one of them" under.
    min_topicality: float = 0.15
    topicality_words: int = 5
    # The narrator's own lines (hook fallbacks, answers to prompts): two short sentences.
    narration: GenerationSettings = dataclasses.field(
        default_factory=lambda: GenerationSettings(temperature=0.7, max_new_tokens=60, max_sentences=2)
    )
    prompting: PromptConfig = dataclasses.field(default_factory=PromptConfig)
    # MiniLM cosine from typed words to an offered choice that makes them that choice: "I'll ask Eve about it"
    # against "Ask Eve what happened" scores 0.82, "I dance with the sailors" against either choice under 0.2.
    own_choice_similarity: float = 0.45


class Narrator:
    """Runs `Job`s; owns the worker's language model (loaded on first use, on the language thread)."""

    def __init__(
        self,
        embedder: Embedder,
        load_language_model: Callable[[], LanguageModel] | None,
        config: NarratorConfig | None = None,
        urgent_run: Callable[[], None] = lambda: None,
    ) -> None:
        """`urgent_run` runs the urgent work waiting (see `Urgency`), between the steps of a long job."""
        self.embedder = embedder
        self.load_language_model = load_language_model
        self.config = config or NarratorConfig()
        self.urgent_run = urgent_run
        self._language_model: LanguageModel | None = None
        self._classifiers: dict[tuple[str, str], BranchClassifier] = {}
        self._embeddings: dict[str, np.ndarray] = {}

    @property
    def language_model(self) -> LanguageModel | None:
        if self._language_model is None and self.load_language_model is not None:
            self._language_model = self.load_language_model()
        return self._language_model

    def warm_up(self) -> None:
        """Load the model before the first player waits for it."""
        if self.language_model is not None:
            logger.info("language model ready")

    def run(self, job: Job, link: PlatformLink) -> None:
        try:
            {"reply": self.reply, "offer": self.offer, "hook": self.hook, "narrate": self.narrate}[job.kind](job, link)
        except Exception:
            logger.exception("narrative job %s of session %s failed", job.kind, job.session)
            link.send(SessionError(session=job.session, error="the storyteller stumbled; say that again"))

    def forget(self, session: str) -> None:
        self._classifiers = {key: value for key, value in self._classifiers.items() if key[0] != session}

    # A character's reply

    def reply(self, job: Job, link: PlatformLink) -> None:
        member: CastMember = job.data["character"]
        setting = job.setting
        assert setting is not None  # a character belongs to a setting
        said: str = job.data["text"]
        name = member.sheet.name
        model = self.language_model
        if model is None:
            refusal = f"{name} cannot talk here: this worker runs no language model"
            link.send(SessionError(session=job.session, error=refusal))
            return
        history: list[Message] = job.data["history"]
        replies = [message["content"] for message in history if message["role"] == "assistant"]
        recent = [message["content"] for message in history[-4:]] + [said]
        query = self.embedder.embed([said])[0]  # (D,)
        recalled = link.recall(
            session=job.session,
            character=member.id,
            speaker=job.data["speaker"],
            query=query.astype("<f4").tobytes(),
            recent=recent,
        )
        memories = list(recalled.memories) if recalled is not None else []
        told = list(recalled.told) if recalled is not None else []
        clues = [
            clue.text
            for clue in member.clues
            if clue.name in job.data.get("revealed_clues", ())
            or clue.holds(beat=job.data["beat"], flags=job.data["flags"], recent_text=" ".join(recent))
        ]
        spoken = [message["content"] for message in history if message["role"] == "user"]
        players_own = memories + told
        player_name = job.data["speaker"] or name_told([*spoken, said], players_own) or setting.player_name
        lore = list(recalled.lore) if recalled is not None else []
        previous = spoken[-1] if spoken else ""
        recollection = recollect(said, query, players_own, self.embedder, previous=previous)
        known = self.known(member, setting, clues, lore, player_name)
        introduced = introduced_name(said) if recollection is None else ""
        grounding = None
        unanswered = recollection is None and not introduced
        asks_what_was_not_told = unanswered and asks_about_the_player(said, previous)
        if unanswered and not asks_what_was_not_told:
            # Two sentences the character knows that fit the question alike are usually both true of it, unlike
            # two memories, so the best one grounds the reply however close the runner-up.
            knowledge = dataclasses.replace(self.config.prompting, grounding_margin=0.0)
            # A sentence the character said in a reply it still remembers would be said again word for word.
            replied = " ".join(replies)
            unsaid = [fact for fact in known if fact.text not in replied]
            grounding = grounding_fact(said, query, unsaid, knowledge)
        prompt_of = functools.partial(
            character_prompt,
            character=member.sheet,
            player_message=said,
            world_rules=setting.world_rules,
            lore=lore,
            memories=memories,
            clues=clues,
            recollection=recollection,
            introduced=introduced,
            grounding=grounding,
            greeting=member.greeting,
            player_name=player_name,
            config=self.config.prompting,
        )
        prompt = prompt_of(history=history)
        messages = [{"role": message["role"], "content": message["content"]} for message in prompt.messages]
        link.send(SessionDebugPrompt(session=job.session, character=name, sections=prompt.sections, messages=messages))
        last_reply = replies[-1] if replies else ""
        context = ReplyContext(
            setting.world_words,
            last_reply=last_reply,
            player_name=player_name,
            player_line=said,
            known_words=setting.world_words | world_words_of([message["content"] for message in messages]),
            character_name=name,
            earlier_replies=replies[:-1],
            identity=identity_stems_of([name, member.sheet.persona, member.sheet.personality]),
            player_told=identity_stems_of([*players_own, said]) if asks_what_was_not_told else None,
            player_things_asked=frozenset(anchors_of(said) if asks_what_was_not_told else ()),
        )
        samples = self.config.resamples + 1
        deadline = time.monotonic() + self.config.reply_budget_seconds
        topic = self.embedder.embed([f"{said} {member.sheet.persona} {setting.world_rules}"])[0]  # (D,)
        shown = self.checked_reply(model, prompt, job, link, context, topic, range(samples), deadline)
        if not shown and history:
            # The talk so far is what a failing model says again (the last reply, the player's own words) or
            # drifts on from; asked without it, the same model often answers the line itself.
            without_talk = range(samples, samples + self.config.samples_without_talk)
            bare = prompt_of(history=[])
            shown = self.checked_reply(model, bare, job, link, context, topic, without_talk, deadline)
        if not shown:
            # Once the talk has begun, the greeting and any line already said would read as the character
            # starting over. Asked about the player, no line of the creator's answers it.
            said_before = [*replies, member.greeting] if replies else []
            shown = [
                NOT_RECALLED
                if asks_what_was_not_told
                else self.creator_line(member, query, known, said_before, player_name)
            ]
            link.send(SessionCharacterLine(session=job.session, character=name, text=shown[0], final=False))
        reply = " ".join(shown)
        link.send(SessionCharacterLine(session=job.session, character=name, text="", final=True))
        link.send(
            SessionExchange(
                session=job.session,
                sequence=job.data["sequence"],
                character=member.id,
                speaker=job.data["speaker"],
                said=said,
                reply=reply,
                memories=self.told_memories(said),
            )
        )
        link.conversation_record(job.session, name, said, reply)

    def told_memories(self, said: str) -> list[ToldMemory]:
        """What the player's line gives the character to remember, as `session.exchange` carries it."""
        told = extract_memories(said, turn=0)
        vectors = self.embedder.embed([memory.text for memory in told])  # (M, D)
        return [
            ToldMemory(text=memory.text, importance=memory.importance, embedding=vector.astype("<f4").tobytes())
            for memory, vector in zip(told, vectors, strict=True)
        ]

    def checked_reply(
        self,
        model: LanguageModel,
        prompt: CharacterPrompt,
        job: Job,
        link: PlatformLink,
        context: ReplyContext,
        topic: np.ndarray,
        attempts: range,
        deadline: float,
    ) -> list[str]:
        """The sentences of the first sample whose opening passes the checks, shown as they are written; a
        later sentence that fails ends the reply there. [] when every sample failed or the budget ran out.

        The model's opening is held until it has said enough words to judge whether it is about this turn (a
        bare "Most evenings." is, once "It rolls in off the causeway." follows); a reply that ends sooner is
        judged as it is, against `topic` ((D,): the player's line with the persona and the world's rules). The
        grounding prefix is the platform's own sentence, shown at once and never refused for repeating the last
        reply."""
        member: CastMember = job.data["character"]
        setting = job.setting
        assert setting is not None
        name = member.sheet.name
        enough = max(self.config.reply_sentences, len(sentences_of(prompt.reply_prefix)))
        for attempt in attempts:
            if attempt and time.monotonic() > deadline:
                break
            settings = dataclasses.replace(member.settings, seed=job.data["sequence"] * 31 + attempt)
            pieces = stream_reply(model, prompt, settings)
            shown: list[str] = []
            held: list[str] = []
            judged = False
            for sentence in self.safe_sentences(pieces, setting, link, job.session, name):
                # The grounded answer once; said again it is the model repeating it ("Your name is Tamsin." twice).
                own = sentence in prompt.reply_prefix and sentence not in shown + held
                problems = [] if own else sentence_problems(sentence, context)
                if not own and restates(sentence, prompt.reply_prefix):
                    problems.append("restates the grounded answer")  # "Your name is Ilse. Your name is Ida."
                if problems:
                    logger.info("%s's sentence %r refused: %s", name, sentence, "; ".join(problems))
                    break
                held.append(sentence)
                if not (own or judged):
                    if len(" ".join(held).split()) < self.config.topicality_words:
                        continue
                    judged = True
                    if not self.about_this_turn(" ".join(held), topic):
                        logger.info("%s's opening %r refused: not about this turn", name, " ".join(held))
                        held = []
                        break
                shown += self.show(held, job, link, name)
                held = []
                if len(shown) >= enough:
                    break
            if held and (judged or self.about_this_turn(" ".join(held), topic)):
                shown += self.show(held, job, link, name)  # a reply that ended before five words
            if shown:
                return shown
        return []

    def about_this_turn(self, text: str, topic: np.ndarray) -> bool:
        return float(self.embedder.embed([text])[0] @ topic) >= self.config.min_topicality

    @staticmethod
    def show(sentences: list[str], job: Job, link: PlatformLink, name: str) -> list[str]:
        shown = [in_capitals(sentence) for sentence in sentences]
        for sentence in shown:
            link.send(SessionCharacterLine(session=job.session, character=name, text=sentence, final=False))
        return shown

    def creator_line(
        self, member: CastMember, query: np.ndarray, known: list[Fact], recent_replies: list[str], player_name: str
    ) -> str:
        """The creator's words closest to what the player said (`query`, (D,)): one of the character's own
        lines or something it knows, other than `recent_replies`."""
        lines = creator_lines(
            name=member.sheet.name,
            greeting=member.greeting,
            example_dialogue=member.sheet.example_dialogue,
            player_name=player_name,
        )
        everything = dict.fromkeys([*lines, *(fact.text for fact in known)])
        # A reply may hold the line among sentences of the model's own: said there, it is said already.
        candidates = [text for text in everything if not any(text in reply for reply in recent_replies)]
        if not candidates:
            return f"{member.sheet.name} says nothing to that."
        return candidates[int((self.embedded(candidates) @ query).argmax())]

    def known(
        self, member: CastMember, setting: Setting, clues: list[str], lore: list[str], player_name: str
    ) -> list[Fact]:
        """What the character knows now, each sentence in its own voice: clues it may reveal, the lore this
        conversation activated, its persona and scenario, the world's rules and its own example lines."""
        sheet = member.sheet
        own_lines = creator_lines(
            name=sheet.name, greeting="", example_dialogue=sheet.example_dialogue, player_name=player_name
        )
        texts = knowledge_sentences(
            name=sheet.name,
            persona=sheet.persona,
            texts=[*clues, *lore, sheet.persona, sheet.scenario, setting.world_rules],
            first_person_texts=own_lines,
        )
        return [Fact(text, vector, "knowledge") for text, vector in zip(texts, self.embedded(texts), strict=True)]

    def embedded(self, texts: list[str]) -> np.ndarray:
        """MiniLM embeddings (T, D) of `texts`, kept between replies: a character's knowledge rarely changes."""
        missing = [text for text in dict.fromkeys(texts) if text not in self._embeddings]
        if missing:
            if len(self._embeddings) + len(missing) > EMBEDDINGS_KEPT:
                self._embeddings.clear()
            self._embeddings.update(zip(missing, self.embedder.embed(missing), strict=True))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._embeddings[text] for text in texts])

    @staticmethod
    def safe_sentences(
        pieces: Iterable[str], setting: Setting, link: PlatformLink, session: str, speaker: str
    ) -> Iterator[str]:
        """Whole sentences of a streamed reply, each checked; stops (and reports) at the first refused one."""
        buffered = ""
        for piece in pieces:
            buffered += piece
            while (end := SENTENCE_END.search(buffered)) is not None:
                sentence, buffered = buffered[: end.end()].strip(), buffered[end.end() :]
                if sentence and not allowed(sentence, setting, link, session, speaker):
                    return
                if sentence:
                    yield sentence
        if buffered.strip() and allowed(buffered.strip(), setting, link, session, speaker):
            yield buffered.strip()

    # A beat's choices

    def offer(self, job: Job, link: PlatformLink) -> None:
        """Write the beat's choices, each a rewrite of one authored choice that leads where that one leads."""
        authored: list[dict[str, str]] = job.data["authored"]
        choices = [{"text": choice["text"], "to": choice["to"]} for choice in authored]
        source = "authored"
        model = self.language_model
        if model is not None and authored:
            result = generate_choices(
                model,
                self.embedder,
                scene=job.data["scene"],
                guidance=job.data["guidance"],
                authored=authored,
                seed=job.data["seed"],
                between_choices=self.urgent_run,
            )
            choices, source = self.leading_where_authored(result, authored, job, link), result.source
            if all(choice["text"] == original["text"] for choice, original in zip(choices, authored, strict=True)):
                source = "authored"
        offered = [OfferedChoice(text=choice["text"], to=choice["to"]) for choice in choices]
        offer = Offer(beat=job.data["beat"], choices=offered, source=source)
        link.send(SessionPropose(session=job.session, input=offer))

    def leading_where_authored(
        self, result: ChoiceResult, authored: list[dict[str, str]], job: Job, link: PlatformLink
    ) -> list[dict[str, str]]:
        """The written choices, each leading where the authored choice it rewrites leads; a rewrite the world's
        rating refuses gives way to that authored choice's own text."""
        setting = job.setting
        return [
            {"text": written["text"], "to": original["to"]}
            if setting is None or allowed(written["text"], setting, link, job.session, "choices")
            else {"text": original["text"], "to": original["to"]}
            for written, original in zip(result.choices, authored, strict=True)
        ]

    # A hook's outcome

    def hook(self, job: Job, link: PlatformLink) -> None:
        setting = job.setting
        hook = setting.hook(job.data["hook"]) if setting is not None else None
        if setting is None or hook is None or not hook.branches:
            return
        key = (job.session, hook.name)
        if key not in self._classifiers:
            self._classifiers[key] = BranchClassifier(
                hook.branches, self.embedder, language_model=self.language_model, presentation=hook.presentation
            )
        decision = self._classifiers[key].classify(job.data["text"])
        effects: dict[str, Any] | None = None
        narration: str | None = None
        model = self.language_model
        if decision.branch is not None:
            effects = dict(hook.effects.get(decision.branch, {}))
        elif hook.fallback_enabled and model is not None:
            messages = fallback_messages(
                presentation=hook.presentation, guidance=hook.fallback_guidance, player_input=job.data["text"]
            )
            narration = self.narration(model, messages, setting, link, job.session) or "Nothing comes of it."
        else:
            link.send(SessionNarration(session=job.session, text="Nothing comes of that."))
            return  # the hook keeps waiting for a response it knows
        outcome = HookOutcome(
            hook=hook.name,
            branch=decision.branch,
            scores=decision.scores,
            decided_by=decision.decided_by,
            effects=effects,
            narration=narration,
        )
        link.send(SessionPropose(session=job.session, input=outcome))

    # The narrator

    def narrate(self, job: Job, link: PlatformLink) -> None:
        """A prompt that changes nothing in the world: the player's own choice at a beat, if it reads as one of
        the offered choices; else, when it asked for a change of the world, that nothing changed and why; else
        the narrator says what happens."""
        offered: list[dict[str, str]] | None = job.data.get("offered")
        if offered:
            vectors = self.embedder.embed([job.data["text"], *(choice["text"] for choice in offered)])  # (1 + C, D)
            similarity = vectors[1:] @ vectors[0]  # (C,)
            best = int(similarity.argmax())
            if similarity[best] >= self.config.own_choice_similarity:
                own = OwnChoice(beat=job.data["beat"], index=best, text=job.data["text"])
                link.send(SessionPropose(session=job.session, input=own))
                return
        if job.data.get("unchanged"):
            link.send(SessionNarration(session=job.session, text=job.data["unchanged"]))
            return
        setting = job.setting
        model = self.language_model
        text = "Nothing in the world answers that yet."
        if model is not None and setting is not None:
            messages: list[Message] = [
                {
                    "role": "system",
                    "content": f"You narrate the interactive story {setting.title!r} in the second "
                    f"person. {setting.world_rules} Reply in one or two short sentences "
                    "that say what happens.",
                },
                {"role": "user", "content": job.data["text"]},
            ]
            text = self.narration(model, messages, setting, link, job.session) or text
        link.send(SessionNarration(session=job.session, text=text))

    def narration(
        self, model: LanguageModel, messages: list[Message], setting: Setting, link: PlatformLink, session: str
    ) -> str:
        """The narrator's line for `messages`, checked as a character's reply is; "" when every sample failed."""
        said = " ".join(message["content"] for message in messages if message["role"] == "user")
        # "is it going to rain?" told back word for word is no narration.
        context = ReplyContext(world_words=setting.world_words, player_line=said)
        topic = self.embedder.embed([said])[0]
        for _ in range(self.config.resamples + 1):
            text = complete(model, messages, self.config.narration).strip()
            problems = [problem for sentence in sentences_of(text) for problem in sentence_problems(sentence, context)]
            if text and not problems and self.about_this_turn(text, topic):
                return text if allowed(text, setting, link, session, "narrator") else ""
            logger.info("narration %r refused: %s", text, "; ".join(problems) or "not about this turn")
        return ""


# "i", alone or in a contraction ("i'm", "i'd"), which a small model writes when the player types in lower case.
LOWER_CASE_I = re.compile(r"\bi\b(?![-.])")
FIRST_LETTER = re.compile(r"^(\W*)(\w)")


def in_capitals(sentence: str) -> str:
    """The sentence with its first letter and every "I" in capitals, as a character's line is written."""
    sentence = LOWER_CASE_I.sub("I", sentence)
    return FIRST_LETTER.sub(lambda found: found.group(1) + found.group(2).upper(), sentence, count=1)


def restates(sentence: str, prefix: str) -> bool:
    """Whether a sentence the model wrote after a grounded answer opens as the answer did, to say it again."""
    opening = prefix.lower().split()[:3]
    return len(opening) == 3 and sentence.lower().split()[:3] == opening


def allowed(text: str, setting: Setting, link: PlatformLink, session: str, speaker: str) -> bool:
    """Whether the world's rating allows `text`; refused text is reported for the moderators."""
    terms = refused_terms(text, rating=setting.rating, terms=setting.terms)
    if terms:
        link.send(SessionBlocked(session=session, character=speaker, text=text, terms=terms))
    return not terms
