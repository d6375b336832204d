"""Worlds, characters, lorebooks and hooks as creators author them, and the frozen versions they publish.

The authored objects are a creator's working copy. Publishing a world freezes everything it reaches (its
characters, their lorebooks, its hooks and stories) into a `WorldVersion`: one immutable JSON document in the
cartridge format (`worlds.documents`). Play sessions pin a version; editing the working copy after publishing
is the draft of the next version while the published one stays playable; a remix rebuilds a new working copy
from a version's document.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator, MaxValueValidator, MinValueValidator
from django.db import models

from common.images import ReencodedImageField, image_validator
from worlds import validation
from worlds.categories import Category


def bounded_text(*, max_length: int, **options: Any) -> models.TextField:
    """A TextField whose max_length is checked by model validation (Django only passes it to form widgets)."""
    return models.TextField(max_length=max_length, validators=[MaxLengthValidator(max_length)], **options)


class ContentRating(models.TextChoices):
    EVERYONE = "everyone", "Everyone"
    TEEN = "teen", "Teen"
    MATURE = "mature", "Mature"


class Tag(models.Model):
    """A gallery tag, shared by every world that uses it."""

    name = models.SlugField(max_length=40, unique=True)

    def __str__(self) -> str:
        return self.name


class Lorebook(models.Model):
    """World Info: entries a language model is given when recent messages mention their keys.

    Fields and their meaning follow SillyTavern's World Info and the Character Card V2 `character_book`.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lorebooks")
    name = models.CharField(max_length=200)
    description = bounded_text(blank=True, max_length=5000)
    scan_depth = models.PositiveSmallIntegerField(default=4)  # how many recent messages are searched for keys
    token_budget = models.PositiveIntegerField(default=1024)
    recursive_scanning = models.BooleanField(default=False)
    extensions = models.JSONField(default=dict, blank=True)  # other tools' fields, kept for round trips
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name


class SelectiveLogic(models.TextChoices):
    """How secondary keys combine with a primary key match (SillyTavern's selectiveLogic 0..3)."""

    AND_ANY = "and_any", "and any secondary key"
    NOT_ALL = "not_all", "not all secondary keys"
    NOT_ANY = "not_any", "none of the secondary keys"
    AND_ALL = "and_all", "and all secondary keys"


class LoreEntry(models.Model):
    """One World Info entry. Nullable flags mean "the application's default", as in the card formats."""

    lorebook = models.ForeignKey(Lorebook, on_delete=models.CASCADE, related_name="entries")
    name = models.CharField(max_length=200, blank=True)
    comment = models.CharField(max_length=500, blank=True)  # the author's label; never prompt text
    keys = models.JSONField(default=list, blank=True)  # required unless constant, see clean()
    secondary_keys = models.JSONField(default=list, blank=True)
    selective = models.BooleanField(default=False)
    selective_logic = models.CharField(max_length=8, choices=SelectiveLogic.choices, default=SelectiveLogic.AND_ANY)
    content = bounded_text(max_length=20000)
    insertion_order = models.IntegerField(default=100)
    priority = models.IntegerField(null=True, blank=True)
    constant = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)
    case_sensitive = models.BooleanField(null=True, blank=True)
    match_whole_words = models.BooleanField(null=True, blank=True)
    position = models.CharField(max_length=20, default="before_char")
    probability = models.PositiveSmallIntegerField(default=100)
    use_probability = models.BooleanField(default=True)
    prevent_recursion = models.BooleanField(default=False)
    exclude_recursion = models.BooleanField(default=False)
    extensions = models.JSONField(default=dict, blank=True)
    # Fields of imported files we keep only to write them back (an entry id, use_regex, unknown keys).
    format_extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["insertion_order", "id"]
        verbose_name_plural = "lore entries"

    def __str__(self) -> str:
        return self.name or ", ".join(self.keys)

    def clean(self) -> None:
        validation.strings_clean("keys", self.keys, required=not self.constant)
        validation.strings_clean("secondary_keys", self.secondary_keys)
        if self.probability > 100:
            raise ValidationError({"probability": "is a percentage, 0 to 100"})


class MemoryScope(models.TextChoices):
    PLAYER = "player", "Each player separately"
    WORLD = "world", "Shared by everyone in the world"
    NONE = "none", "Nothing is remembered"


class Character(models.Model):
    """A character with a persona, clues to reveal, and a policy for what it remembers of players."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="characters")
    name = models.CharField(max_length=100)
    persona = bounded_text(max_length=20000)  # the card format's `description`
    personality = bounded_text(blank=True, max_length=5000)
    appearance = bounded_text(blank=True, max_length=5000)
    speaking_style = bounded_text(blank=True, max_length=5000)
    scenario = bounded_text(blank=True, max_length=10000)
    greeting = bounded_text(max_length=10000)
    alternate_greetings = models.JSONField(default=list, blank=True)
    example_dialogue = bounded_text(blank=True, max_length=20000)
    goals = bounded_text(blank=True, max_length=5000)
    secrets = bounded_text(blank=True, max_length=5000)
    system_prompt = bounded_text(blank=True, max_length=10000)
    post_history_instructions = bounded_text(blank=True, max_length=10000)
    # How the character's replies are sampled: a small model stays coherent when warm only briefly.
    reply_temperature = models.FloatField(
        default=0.7,
        validators=[MinValueValidator(0.0), MaxValueValidator(2.0)],
        help_text="0 always says the likeliest words; higher is more varied (and, on a small model, less coherent).",
    )
    reply_max_tokens = models.PositiveSmallIntegerField(
        default=80,
        validators=[MinValueValidator(8), MaxValueValidator(400)],
        help_text="The longest reply, in tokens (about three quarters of a word each).",
    )
    # Notes to people reading the card; never part of a prompt.
    creator_notes = bounded_text(blank=True, max_length=20000)
    tags = models.JSONField(default=list, blank=True)
    lorebook = models.ForeignKey(Lorebook, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    portrait = ReencodedImageField(upload_to="portraits/", blank=True, validators=[image_validator])
    memory_scope = models.CharField(max_length=8, choices=MemoryScope.choices, default=MemoryScope.PLAYER)
    memory_limit = models.PositiveIntegerField(default=200)
    players_can_view_memories = models.BooleanField(default=True)
    players_can_edit_memories = models.BooleanField(default=False)
    # The card format's fields we do not use, kept verbatim so an exported card matches what came in.
    card_extensions = models.JSONField(default=dict, blank=True)
    card_extra = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        validation.strings_clean("alternate_greetings", self.alternate_greetings)
        validation.strings_clean("tags", self.tags)


class ClueCondition(models.TextChoices):
    BEAT = "beat", "a story beat is reached"
    FLAG = "flag", "a flag is set"
    KEYWORD = "keyword", "the player asks about a keyword"


class Clue(models.Model):
    """Something a character knows and reveals only once its condition holds."""

    character = models.ForeignKey(Character, on_delete=models.CASCADE, related_name="clues")
    name = models.SlugField(max_length=60)
    text = bounded_text(max_length=5000)
    condition = models.CharField(max_length=8, choices=ClueCondition.choices)
    condition_value = models.CharField(max_length=200)  # the beat's name, the flag's name, or the keyword

    class Meta:
        constraints = [models.UniqueConstraint(fields=["character", "name"], name="clue_name_unique_per_character")]

    def __str__(self) -> str:
        return self.name


class World(models.Model):
    """A creator's world: how it looks and runs, who lives in it, and what can happen there."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worlds")
    title = models.CharField(max_length=120)
    slug = models.SlugField(max_length=140, unique=True)
    logline = models.CharField(max_length=200)
    description = bounded_text(blank=True, max_length=10000)
    category = models.CharField(max_length=12, choices=Category.choices, default=Category.GAMES)
    tags = models.ManyToManyField(Tag, blank=True, related_name="worlds")
    content_rating = models.CharField(max_length=8, choices=ContentRating.choices, default=ContentRating.EVERYONE)
    cover_image = ReencodedImageField(upload_to="covers/", blank=True, validators=[image_validator])
    visual_style = bounded_text(blank=True, max_length=2000)
    engine = models.CharField(max_length=60, default="raycaster")
    engine_parameters = models.JSONField(default=dict, blank=True)
    opening_scene = bounded_text(blank=True, max_length=10000)
    world_rules = bounded_text(blank=True, max_length=10000)
    characters = models.ManyToManyField(Character, blank=True, related_name="worlds")
    lorebooks = models.ManyToManyField(Lorebook, blank=True, related_name="worlds")
    remixed_from = models.ForeignKey(
        "WorldVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="remixes"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.title

    def clean(self) -> None:
        validation.engine_clean(self.engine, self.engine_parameters)


class WorldReferenceImage(models.Model):
    """An image whose colours shape the world's palette."""

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="reference_images")
    image = ReencodedImageField(upload_to="references/", validators=[image_validator])
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.image.name


class HookTrigger(models.TextChoices):
    AREA = "area", "the player enters an area"
    KEYWORDS = "keywords", "the player says or types a keyword"
    INTENT = "intent", "the player expresses an intent"
    BEAT = "beat", "a story beat is reached"
    FLAG = "flag", "a flag is set"


class Hook(models.Model):
    """A branching beat: something the world presents, and outcomes that depend on what the player does."""

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="hooks")
    name = models.SlugField(max_length=60)
    trigger = models.CharField(max_length=8, choices=HookTrigger.choices)
    # area: {"x", "y", "radius"} in cells; keywords: {"keywords": [...]}; intent: {"intent": "..."};
    # beat: {"beat": "name"}; flag: {"flag": "name"}. Checked by worlds.validation.
    trigger_value = models.JSONField(default=dict)
    presentation = bounded_text(max_length=5000)  # what the world shows or says when the hook fires
    fallback_enabled = models.BooleanField(default=True)
    fallback_guidance = bounded_text(blank=True, max_length=2000)
    # Play statistics for the creator, not content: worlds.documents leaves them out of documents and exports.
    times_fallen_back = models.PositiveIntegerField(default=0, editable=False)  # no branch fit the player's input

    class Meta:
        constraints = [models.UniqueConstraint(fields=["world", "name"], name="hook_name_unique_per_world")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        validation.hook_trigger_clean(self.trigger, self.trigger_value)


class HookBranch(models.Model):
    """One outcome of a hook, chosen when the player's input matches its intent."""

    hook = models.ForeignKey(Hook, on_delete=models.CASCADE, related_name="branches")
    name = models.SlugField(max_length=60)
    intent = models.CharField(max_length=300)
    examples = models.JSONField(default=list, blank=True)  # a few player inputs that mean this intent (required)
    # {"set_flags": [...], "reveal_clues": [...], "world_events": [{"kind": "night"}], "move_to_beat": "...",
    #  "narration": "..."}; checked by worlds.validation.
    effects = models.JSONField(default=dict, blank=True)
    order = models.PositiveSmallIntegerField(default=0)
    times_chosen = models.PositiveIntegerField(default=0, editable=False)  # a play statistic, like the hook's

    class Meta:
        ordering = ["order", "id"]
        constraints = [models.UniqueConstraint(fields=["hook", "name"], name="branch_name_unique_per_hook")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        validation.strings_clean("examples", self.examples, required=True)
        validation.branch_effects_clean(self.effects)


class Story(models.Model):
    """An interactive movie played in a world: it opens on a scene and moves along its beat graph."""

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="stories")
    title = models.CharField(max_length=120)
    opening_scene = bounded_text(blank=True, max_length=10000)
    start_beat = models.CharField(max_length=200)
    characters = models.ManyToManyField(Character, blank=True, related_name="stories")
    # Twine's StoryData (ifid, format, …) kept so that an exported Twee file matches the one imported.
    twine_data = models.JSONField(default=dict, blank=True)

    class Meta:
        verbose_name_plural = "stories"

    def __str__(self) -> str:
        return self.title


class Beat(models.Model):
    """A step of a story. Its authored choices are the fallback when generated ones are unusable.

    `choices` is a list of {"text": …, "to": beat name}; a beat without choices is an ending. A scene imported
    from Twine keeps its `[[links]]` in the text as the author wrote them.
    """

    story = models.ForeignKey(Story, on_delete=models.CASCADE, related_name="beats")
    # Any text, so that Twine passage names ("The Docks") survive an import and export unchanged.
    name = models.CharField(max_length=200)
    scene = bounded_text(blank=True, max_length=10000)
    goal = bounded_text(blank=True, max_length=2000)
    choice_guidance = bounded_text(blank=True, max_length=2000)
    choices = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    twine_metadata = models.JSONField(default=dict, blank=True)  # a passage's position and size in Twine
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["order", "id"]
        constraints = [models.UniqueConstraint(fields=["story", "name"], name="beat_name_unique_per_story")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        validation.choices_clean(self.choices)
        validation.strings_clean("tags", self.tags)

    @property
    def is_ending(self) -> bool:
        return not self.choices


class ReviewStatus(models.TextChoices):
    """Where a submitted version stands with the moderators; only approved versions are public."""

    PENDING = "pending", "Waiting for review"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    TAKEN_DOWN = "taken_down", "Taken down"


class WorldVersion(models.Model):
    """A published, immutable version of a world: the document of everything it reaches when it was frozen.

    The document never changes; the review fields record what the moderators decided about it (see
    moderation.services). The world's live version is its newest approved one, so an approved version stays
    live while a newer submission waits for review.
    """

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    document = models.JSONField()
    published_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    published_at = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=10, choices=ReviewStatus.choices, default=ReviewStatus.PENDING)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reason = bounded_text(blank=True, max_length=2000)  # the moderator's words, shown to the creator

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["world", "number"], name="version_number_unique_per_world")]
        indexes = [models.Index(fields=["world", "status", "-number"], name="version_world_status_number")]

    def __str__(self) -> str:
        return f"{self.world} v{self.number}"
