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

import base64
import dataclasses
import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from inference.language.base import GenerationSettings, LanguageModel, Message, complete
from inference.language.embedding import Embedder
from inference.narrative.choices import ChoiceResult, generate_choices
from inference.narrative.hooks import BranchClassifier, fallback_messages
from inference.narrative.memory import extract_memories
from inference.narrative.prompting import (
    CharacterPrompt,
    Fact,
    PromptConfig,
    character_prompt,
    grounding_fact,
    stream_reply,
)
from inference.narrative.recollection import recollect
from inference.narrative.reply_checks import ReplyContext, creator_lines, sentence_problems
from inference.narrative.safety import refused_terms
from inference.narrative.setting import CastMember, Setting
from inference.play.host import Job

logger = logging.getLogger(__name__)
SENTENCE_END = re.compile(r"[.!?…](?=\s)|\n")


class PlatformLink(Protocol):
    """How narrative work reaches the platform and the session host; callable from any thread."""

    def send(self, message: Message | dict[str, Any]) -> None: ...

    def recall(self, request: dict[str, Any]) -> dict[str, Any] | None: ...  # None: no answer in time

    def conversation_record(self, session: str, character: str, said: str, reply: str) -> None: ...


@dataclass(frozen=True)
class NarratorConfig:
    """How the narrator samples and what it does with refused text."""

    # Replies refused before any sentence was shown are sampled again this often, then replaced by a line
    # the creator wrote; no resample starts once a reply has taken `reply_budget_seconds`.
    resamples: int = 2
    reply_budget_seconds: float = 12.0
    # One to three whole sentences: what the prompt asks for and what a small model keeps coherent.
    reply_sentences: int = 3
    # The narrator's own lines (hook fallbacks, answers to prompts): two short sentences.
    narration: GenerationSettings = dataclasses.field(
        default_factory=lambda: GenerationSettings(temperature=0.7, max_new_tokens=60)
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
    ) -> None:
        self.embedder = embedder
        self.load_language_model = load_language_model
        self.config = config or NarratorConfig()
        self._language_model: LanguageModel | None = None
        self._classifiers: dict[tuple[str, str], BranchClassifier] = {}

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
            link.send({"type": "session.error", "session": job.session,
                       "error": "the storyteller stumbled; say that again"})  # fmt: skip

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
            link.send({"type": "session.error", "session": job.session,
                       "error": f"{name} cannot talk here: this worker runs no language model"})  # fmt: skip
            return
        history: list[Message] = job.data["history"]
        recent = [message["content"] for message in history[-4:]] + [said]
        query = self.embedder.embed([said])[0]  # (D,)
        recalled = link.recall({
            "session": job.session, "character": member.id, "speaker": job.data["speaker"],
            "query": base64.b64encode(query.astype("<f4").tobytes()).decode(), "recent": recent,
        }) or {}  # fmt: skip
        memories = [str(text) for text in recalled.get("memories", [])]
        clues = [
            clue.text
            for clue in member.clues
            if clue.name in job.data.get("revealed_clues", ())
            or clue.holds(beat=job.data["beat"], flags=job.data["flags"], recent_text=" ".join(recent))
        ]
        player_name = job.data["speaker"] or setting.player_name
        recollection = recollect(said, query, memories, self.embedder)
        prompt = character_prompt(
            character=member.sheet,
            player_message=said,
            history=history,
            world_rules=setting.world_rules,
            lore=[str(text) for text in recalled.get("lore", [])],
            memories=memories,
            clues=clues,
            recollection=recollection,
            grounding=None if recollection else grounding_fact(said, query, self.facts(clues), self.config.prompting),
            greeting=member.greeting,
            player_name=player_name,
            config=self.config.prompting,
        )
        link.send({"type": "session.debug_prompt", "session": job.session, "character": name,
                   "sections": prompt.sections, "messages": prompt.messages})  # fmt: skip
        last_reply = next((message["content"] for message in reversed(history) if message["role"] == "assistant"), "")
        context = ReplyContext(world_words=setting.world_words, last_reply=last_reply, player_name=player_name)
        shown = self.checked_reply(model, prompt, job, link, context)
        if not shown:
            shown = [self.creator_line(member, said, last_reply, player_name)]
            link.send({"type": "session.character_line", "session": job.session, "character": name,
                       "text": shown[0], "final": False})  # fmt: skip
        reply = " ".join(shown)
        link.send({"type": "session.character_line", "session": job.session, "character": name, "text": "",
                   "final": True})  # fmt: skip
        told = extract_memories(said, turn=0)
        vectors = self.embedder.embed([memory.text for memory in told])  # (M, D)
        link.send({
            "type": "session.exchange", "session": job.session, "sequence": job.data["sequence"],
            "character": member.id, "speaker": job.data["speaker"], "said": said, "reply": reply,
            "memories": [
                {"text": memory.text, "importance": memory.importance,
                 "embedding": base64.b64encode(vector.astype("<f4").tobytes()).decode()}
                for memory, vector in zip(told, vectors, strict=True)
            ],
        })  # fmt: skip
        link.conversation_record(job.session, name, said, reply)

    def checked_reply(
        self, model: LanguageModel, prompt: CharacterPrompt, job: Job, link: PlatformLink, context: ReplyContext
    ) -> list[str]:
        """The sentences of the first sample whose opening passes the checks, each shown as it is written; a
        later sentence that fails ends the reply there. [] when every sample failed or the budget ran out."""
        member: CastMember = job.data["character"]
        setting = job.setting
        assert setting is not None
        name = member.sheet.name
        started = time.monotonic()
        for attempt in range(self.config.resamples + 1):
            if attempt and time.monotonic() - started > self.config.reply_budget_seconds:
                break
            settings = dataclasses.replace(member.settings, seed=job.data["sequence"] * 31 + attempt)
            shown: list[str] = []
            for sentence in self.safe_sentences(
                stream_reply(model, prompt, settings), setting, link, job.session, name
            ):
                problems = sentence_problems(sentence, context)
                if problems:
                    logger.info("%s's sentence %r refused: %s", name, sentence, "; ".join(problems))
                    break
                shown.append(sentence)
                link.send({"type": "session.character_line", "session": job.session, "character": name,
                           "text": sentence, "final": False})  # fmt: skip
                if len(shown) >= self.config.reply_sentences:
                    break
            if shown:
                return shown
        return []

    def creator_line(self, member: CastMember, said: str, last_reply: str, player_name: str) -> str:
        """The creator's line for this character closest to what the player said, other than the last reply."""
        lines = [
            line
            for line in creator_lines(
                name=member.sheet.name,
                greeting=member.greeting,
                example_dialogue=member.sheet.example_dialogue,
                player_name=player_name,
            )
            if line != last_reply
        ]
        if not lines:
            return f"{member.sheet.name} says nothing to that."
        vectors = self.embedder.embed([said, *lines])  # (1 + L, D)
        return lines[int((vectors[1:] @ vectors[0]).argmax())]

    def facts(self, clues: list[str]) -> list[Fact]:
        vectors = self.embedder.embed(clues)  # (C, D)
        return [Fact(text, vector, "clue") for text, vector in zip(clues, vectors, strict=True)]

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
                model, self.embedder, scene=job.data["scene"], guidance=job.data["guidance"], authored=authored,
                seed=job.data["seed"],
            )  # fmt: skip
            choices, source = self.leading_where_authored(result, authored, job, link), result.source
            if all(choice["text"] == original["text"] for choice, original in zip(choices, authored, strict=True)):
                source = "authored"
        offer = {"type": "offer", "beat": job.data["beat"], "choices": choices, "source": source}
        link.send({"type": "session.propose", "session": job.session, "input": offer})

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
        outcome: dict[str, Any] = {"type": "hook_outcome", "hook": hook.name, "branch": decision.branch,
                                   "scores": decision.scores, "decided_by": decision.decided_by}  # fmt: skip
        model = self.language_model
        if decision.branch is not None:
            outcome["effects"] = hook.effects.get(decision.branch, {})
        elif hook.fallback_enabled and model is not None:
            messages = fallback_messages(
                presentation=hook.presentation, guidance=hook.fallback_guidance, player_input=job.data["text"]
            )
            narration = self.narration(model, messages, setting, link, job.session)
            outcome["narration"] = narration or "Nothing comes of it."
        else:
            link.send({"type": "session.narration", "session": job.session, "text": "Nothing comes of that."})
            return  # the hook keeps waiting for a response it knows
        link.send({"type": "session.propose", "session": job.session, "input": outcome})

    # The narrator

    def narrate(self, job: Job, link: PlatformLink) -> None:
        """A prompt that changes nothing in the world: the player's own choice at a beat, if it reads as one of
        the offered choices; otherwise the narrator says what happens."""
        offered: list[dict[str, str]] | None = job.data.get("offered")
        if offered:
            vectors = self.embedder.embed([job.data["text"], *(choice["text"] for choice in offered)])  # (1 + C, D)
            similarity = vectors[1:] @ vectors[0]  # (C,)
            best = int(similarity.argmax())
            if similarity[best] >= self.config.own_choice_similarity:
                own = {"type": "own_choice", "beat": job.data["beat"], "index": best, "text": job.data["text"]}
                link.send({"type": "session.propose", "session": job.session, "input": own})
                return
        setting = job.setting
        model = self.language_model
        text = "Nothing in the world answers that yet."
        if model is not None and setting is not None:
            messages: list[Message] = [
                {"role": "system", "content": f"You narrate the interactive story {setting.title!r} in the second "
                                              f"person. {setting.world_rules} Reply in one or two short sentences "
                                              "that say what happens."},
                {"role": "user", "content": job.data["text"]},
            ]  # fmt: skip
            text = self.narration(model, messages, setting, link, job.session) or text
        link.send({"type": "session.narration", "session": job.session, "text": text})

    def narration(
        self, model: LanguageModel, messages: list[Message], setting: Setting, link: PlatformLink, session: str
    ) -> str:
        text = complete(model, messages, self.config.narration).strip()
        return text if allowed(text, setting, link, session, "narrator") else ""


def allowed(text: str, setting: Setting, link: PlatformLink, session: str, speaker: str) -> bool:
    """Whether the world's rating allows `text`; refused text is reported for the moderators."""
    terms = refused_terms(text, rating=setting.rating, terms=setting.terms)
    if terms:
        link.send({"type": "session.blocked", "session": session, "character": speaker, "text": text, "terms": terms})
    return not terms
