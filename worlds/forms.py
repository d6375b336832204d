"""The studio's forms: authored content edited as friendly fields, validated by the models' own clean().

JSON fields are edited the way creators think of them: lists as one item per line or comma-separated text,
colours as colour pickers, a branch's effects and a hook's trigger as separate inputs. Those inputs are
assembled into the model's JSON in `clean()`, so the model's validation (worlds.validation) still has the
last word and its messages appear next to the inputs they concern.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import models
from django.forms.models import BaseInlineFormSet
from django.urls import reverse
from django.utils.html import format_html

from accounts.models import User
from inference.language.embedding import Embedder
from inference.narrative.hooks import Branch, BranchClassifier, BranchDecision
from inference.world.events import OBJECT_KINDS, TIME_OF_DAY_KINDS, WEATHER_KINDS
from inference.world.spec import CONFIG as SPEC_CONFIG
from inference.world.spec import WorldSpec
from workers.selectors import engine_labels
from worlds.imports import MAX_IMPORT_BYTES
from worlds.models import Character, Clue, Hook, HookBranch, HookTrigger, Lorebook, LoreEntry, World
from worlds.selectors import characters_owned
from worlds.services import (
    ChildRow,
    character_create,
    character_update,
    hook_create,
    hook_update,
    lorebook_create,
    lorebook_update,
    world_create,
    world_update,
)

# World events a branch may fire with no further detail; "spawn" takes an object kind and has its own input.
SIMPLE_WORLD_EVENTS = ("night", "dawn", "day", "snow", "rain", "fog", "clear")


class TextListField(forms.CharField):
    """A list of texts typed as one text, split on `separator`; blank items are dropped."""

    def __init__(self, *, separator: str, **options: Any) -> None:
        self.separator = separator
        options.setdefault("required", False)
        if separator == "\n":
            options.setdefault("widget", forms.Textarea(attrs={"rows": 3}))
        super().__init__(**options)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return ("\n" if self.separator == "\n" else ", ").join(value)
        return value

    def to_python(self, value: Any) -> list[str]:
        text = super().to_python(value)
        return [item.strip() for item in text.split(self.separator) if item.strip()]


def comma_list(**options: Any) -> TextListField:
    return TextListField(separator=",", **options)


def line_list(**options: Any) -> TextListField:
    return TextListField(separator="\n", **options)


class ChoicesField(forms.CharField):
    """A beat's authored choices, one per line as "text -> beat name"."""

    widget = forms.Textarea(attrs={"rows": 3})
    arrow = "->"

    def __init__(self, **options: Any) -> None:
        options.setdefault("required", False)
        options.setdefault("help_text", 'One choice per line, as "text -> beat name". No choices: an ending.')
        super().__init__(**options)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(f"{choice['text']} {self.arrow} {choice['to']}" for choice in value)
        return value

    def to_python(self, value: Any) -> list[dict[str, str]]:
        choices = []
        for number, line in enumerate(super().to_python(value).splitlines(), start=1):
            if not line.strip():
                continue
            text, arrow, target = line.rpartition(self.arrow)
            if not arrow or not text.strip() or not target.strip():
                raise ValidationError(f'line {number}: write a choice as "text {self.arrow} beat name"')
            choices.append({"text": text.strip(), "to": target.strip()})
        return choices


class ColourInput(forms.TextInput):
    input_type = "color"


class ColourField(forms.CharField):
    """An [r, g, b] colour picked with an <input type="color">."""

    widget = ColourInput

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return "#{:02x}{:02x}{:02x}".format(*value)
        return value

    def to_python(self, value: Any) -> list[int] | None:
        text = super().to_python(value)
        if not text:
            return None
        try:
            if len(text) != 7 or not text.startswith("#"):
                raise ValueError(text)
            return [int(text[start : start + 2], 16) for start in (1, 3, 5)]
        except ValueError:
            raise ValidationError("pick a colour (#rrggbb)") from None


class NothingWidget(forms.Widget):
    """Draws nothing and reads nothing: the value is assembled in the form's clean()."""

    input_type = "hidden"  # so the form counts it among hidden fields and never labels it

    def render(self, name: str, value: Any, attrs: Any = None, renderer: Any = None) -> str:
        return ""

    def value_from_datadict(self, data: Any, files: Any, name: str) -> None:
        return None

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        # Never "omitted": otherwise ModelForm keeps the old value when the assembled one is empty.
        return False


class AssembledField(forms.Field):
    """A model's JSON field filled by the form's clean() from friendlier inputs; it collects their errors."""

    widget = NothingWidget

    def __init__(self, *, label: str) -> None:
        super().__init__(required=False, label=label)

    def has_changed(self, initial: Any, data: Any) -> bool:
        return False  # the friendly inputs say whether anything changed


@dataclass(frozen=True)
class Group:
    """Fields drawn together in a fieldset; `assembled` is the field whose model errors belong to the group."""

    legend: str
    fields: list[forms.BoundField]
    assembled: forms.BoundField | None


class StudioForm(forms.ModelForm):
    """A model form drawn as fieldsets with legends, in the order `fieldsets` gives."""

    # (legend, field names, the assembled field whose errors the fieldset shows or None)
    fieldsets: ClassVar[Sequence[tuple[str, Sequence[str], str | None]]] = ()

    def groups(self) -> list[Group]:
        return [
            Group(legend, [self[name] for name in names], self[assembled] if assembled else None)
            for legend, names, assembled in self.fieldsets
        ]

    def save_through_service(self, *, owner: User, children: Sequence[ChildRow]) -> models.Model:
        """Hand the form's values, its links and the rows of its formset (`children`) to the entity's service."""
        raise NotImplementedError


def model_values(form: forms.ModelForm) -> dict[str, Any]:
    """The plain field values the form set on its instance, for services that take values."""
    return {
        field.name: getattr(form.instance, field.name)
        for field in form.instance._meta.concrete_fields
        if field.name in form.cleaned_data
    }


# One colour input per wall material the spec allows; the page shows as many as "Number of wall colours" says.
PALETTE_NAMES = tuple(f"palette_{number}" for number in range(1, SPEC_CONFIG.max_palette + 1))


def engine_choices() -> list[tuple[str, str]]:
    return list(engine_labels().items())


def kind_choices(kinds: Iterable[str]) -> list[tuple[str, str]]:
    return [(kind, kind.replace("_", " ")) for kind in kinds]


def character_with_worlds(character: Character) -> str:
    """A character's name with the worlds that cast it, so two characters of one name can be told apart."""
    titles = [world.title for world in character.worlds.all()]
    return f"{character.name} (in {', '.join(titles)})" if titles else f"{character.name} (in no world yet)"


class WorldForm(StudioForm):
    tags = comma_list(help_text="Comma-separated, e.g. harbour, mystery, fog. At most 20.")
    engine = forms.ChoiceField(choices=engine_choices)
    engine_parameters = AssembledField(label="Engine parameters")
    seed = forms.IntegerField(min_value=0, max_value=2**63 - 1, help_text="The same seed draws the same map.")
    size = forms.IntegerField(
        min_value=SPEC_CONFIG.min_size, max_value=SPEC_CONFIG.max_size, help_text="The map's width in cells."
    )
    palette_length = forms.TypedChoiceField(
        label="Number of wall colours",
        coerce=int,
        choices=[(number, str(number)) for number in range(1, SPEC_CONFIG.max_palette + 1)],
    )
    sky = ColourField(label="Sky colour")
    floor = ColourField(label="Floor colour")
    time_of_day = forms.ChoiceField(choices=kind_choices(TIME_OF_DAY_KINDS))
    weather = forms.ChoiceField(choices=kind_choices(WEATHER_KINDS))
    fog = forms.BooleanField(required=False, label="Fog")

    fieldsets = (
        ("The world", ("title", "logline", "description", "category", "tags", "content_rating"), None),
        ("Looks", ("cover_image", "visual_style", "engine"), None),
        (
            "Engine parameters",
            ("seed", "size", "time_of_day", "weather", "fog", "sky", "floor", "palette_length", *PALETTE_NAMES),
            "engine_parameters",
        ),
        ("Play", ("opening_scene", "world_rules"), None),
        ("Who and what belongs to it", ("characters", "lorebooks"), None),
    )

    class Meta:
        model = World
        fields = [
            "title",
            "logline",
            "description",
            "category",
            "content_rating",
            "cover_image",
            "visual_style",
            "engine",
            "engine_parameters",
            "opening_scene",
            "world_rules",
            "characters",
            "lorebooks",
        ]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 4}),
            "visual_style": forms.Textarea(attrs={"rows": 2}),
            "characters": forms.CheckboxSelectMultiple,
            "lorebooks": forms.CheckboxSelectMultiple,
        }
        help_texts = {
            "visual_style": "How the world should look, as a prompt for image models.",
            "world_rules": "What the language model must hold true in this world.",
        }

    def __init__(self, *arguments: Any, owner: User, **options: Any) -> None:
        super().__init__(*arguments, **options)
        characters = self.fields["characters"]
        characters.queryset = characters_owned(owner=owner)
        characters.label_from_instance = character_with_worlds
        characters.help_text = format_html(
            'A world casts characters you have already made: <a href="{}">make a character</a> first, '
            "then tick it here.",
            reverse("worlds:character_create"),
        )
        self.fields["lorebooks"].queryset = Lorebook.objects.filter(owner=owner).order_by("name")
        for number, name in enumerate(PALETTE_NAMES, start=1):
            self.fields[name] = ColourField(label=f"Wall colour {number}", required=False)
        if self.instance.pk is not None:
            self.initial.setdefault("tags", list(self.instance.tags.values_list("name", flat=True)))
        self.initial.update({name: value for name, value in self.engine_initial().items() if name not in self.initial})

    def engine_initial(self) -> dict[str, Any]:
        try:
            spec = WorldSpec.from_dict(self.instance.engine_parameters).to_dict()
        except ValueError:
            spec = WorldSpec().to_dict()  # the model refuses to save it; editing starts from the defaults
        palette = spec.pop("palette")
        spec.pop("objects")
        spec["palette_length"] = len(palette)
        defaults = SPEC_CONFIG.default_palette
        for index, name in enumerate(PALETTE_NAMES):
            spec[name] = palette[index] if index < len(palette) else defaults[index % len(defaults)]
        return spec

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        # Keys the form has no input for (objects placed on the map) are kept as they were.
        parameters = dict(self.instance.engine_parameters)
        for name in ("seed", "size", "sky", "floor", "time_of_day", "weather", "fog"):
            if cleaned.get(name) is not None:
                parameters[name] = cleaned[name]
        length = cleaned.get("palette_length") or 0
        colours = [cleaned.get(name) for name in PALETTE_NAMES[:length]]
        if all(colours):
            parameters["palette"] = colours
        else:
            self.add_error(PALETTE_NAMES[colours.index(None)], "pick a colour for each wall material")
        cleaned["engine_parameters"] = parameters
        return cleaned

    def save_through_service(self, *, owner: User, children: Sequence[ChildRow]) -> World:
        links = {name: self.cleaned_data[name] for name in ("tags", "characters", "lorebooks")}
        if self.instance.pk is None:
            return world_create(owner=owner, **links, **model_values(self))
        return world_update(world=self.instance, **links, **model_values(self))


class CharacterForm(StudioForm):
    alternate_greetings = line_list(help_text="One greeting per line; a player meets one of them at random.")
    tags = comma_list(help_text="Comma-separated.")

    fieldsets = (
        ("Who they are", ("name", "persona", "personality", "appearance", "speaking_style", "scenario"), None),
        ("How they greet and speak", ("greeting", "alternate_greetings", "example_dialogue"), None),
        ("What drives them", ("goals", "secrets"), None),
        (
            "Instructions for the model",
            ("system_prompt", "post_history_instructions", "reply_temperature", "reply_max_tokens"),
            None,
        ),
        ("Memory", ("memory_scope", "memory_limit", "players_can_view_memories", "players_can_edit_memories"), None),
        ("Card", ("portrait", "lorebook", "tags", "creator_notes"), None),
    )

    class Meta:
        model = Character
        fields = [
            "name",
            "persona",
            "personality",
            "appearance",
            "speaking_style",
            "scenario",
            "greeting",
            "alternate_greetings",
            "example_dialogue",
            "goals",
            "secrets",
            "system_prompt",
            "post_history_instructions",
            "reply_temperature",
            "reply_max_tokens",
            "memory_scope",
            "memory_limit",
            "players_can_view_memories",
            "players_can_edit_memories",
            "portrait",
            "lorebook",
            "tags",
            "creator_notes",
        ]
        labels = {"memory_limit": "Memories kept at most"}
        help_texts = {
            "persona": "Who the character is; the heart of every prompt.",
            "secrets": "What they hide; clues below decide when each is revealed.",
            "creator_notes": "For people reading the card; never given to the model.",
            "memory_scope": "What the character remembers between conversations.",
        }
        widgets = {name: forms.Textarea(attrs={"rows": 3}) for name in ("personality", "appearance", "goals")}

    def __init__(self, *arguments: Any, owner: User, **options: Any) -> None:
        super().__init__(*arguments, **options)
        self.fields["lorebook"].queryset = Lorebook.objects.filter(owner=owner).order_by("name")

    def save_through_service(self, *, owner: User, children: Sequence[ChildRow]) -> Character:
        if self.instance.pk is None:
            return character_create(owner=owner, clues=children, **model_values(self))
        return character_update(character=self.instance, clues=children, **model_values(self))


class ClueForm(StudioForm):
    fieldsets = (("Clue", ("name", "text", "condition", "condition_value"), None),)

    class Meta:
        model = Clue
        fields = ["name", "text", "condition", "condition_value"]
        labels = {"condition": "Revealed when", "condition_value": "Beat, flag or keyword"}
        widgets = {"text": forms.Textarea(attrs={"rows": 2})}


class LorebookForm(StudioForm):
    fieldsets = (("Lorebook", ("name", "description", "scan_depth", "token_budget", "recursive_scanning"), None),)

    class Meta:
        model = Lorebook
        fields = ["name", "description", "scan_depth", "token_budget", "recursive_scanning"]
        help_texts = {
            "scan_depth": "How many recent messages are searched for keys.",
            "token_budget": "The most tokens of lore given to the model at once.",
            "recursive_scanning": "Entries' content may trigger other entries.",
        }
        widgets = {"description": forms.Textarea(attrs={"rows": 2})}

    def save_through_service(self, *, owner: User, children: Sequence[ChildRow]) -> Lorebook:
        if self.instance.pk is None:
            return lorebook_create(owner=owner, entries=children, **model_values(self))
        return lorebook_update(lorebook=self.instance, entries=children, **model_values(self))


class LoreEntryForm(StudioForm):
    keys = comma_list(help_text="Comma-separated words that bring this entry in. Needed unless constant.")
    secondary_keys = comma_list(help_text="Comma-separated; combined with the keys by the logic below.")

    fieldsets = (
        ("Entry", ("name", "content"), None),
        ("When it is used", ("keys", "secondary_keys", "selective", "selective_logic", "constant", "enabled"), None),
        (
            "Details",
            (
                "insertion_order",
                "priority",
                "position",
                "probability",
                "case_sensitive",
                "prevent_recursion",
                "exclude_recursion",
            ),
            None,
        ),
    )

    class Meta:
        model = LoreEntry
        fields = [
            "name",
            "keys",
            "secondary_keys",
            "selective",
            "selective_logic",
            "content",
            "insertion_order",
            "priority",
            "constant",
            "enabled",
            "case_sensitive",
            "position",
            "probability",
            "prevent_recursion",
            "exclude_recursion",
        ]
        labels = {"selective": "Use secondary keys", "selective_logic": "Secondary key logic", "constant": "Always on"}
        help_texts = {
            "probability": "Percent chance the entry is used when it matches.",
            "position": "Where the entry goes in the prompt, e.g. before_char or after_char.",
        }
        widgets = {"content": forms.Textarea(attrs={"rows": 3})}


# The inputs each trigger kind reads; the page shows only the current kind's when scripts run.
TRIGGER_INPUTS: dict[str, tuple[str, ...]] = {
    HookTrigger.AREA: ("area_x", "area_y", "area_radius"),
    HookTrigger.KEYWORDS: ("keywords",),
    HookTrigger.INTENT: ("intent",),
    HookTrigger.BEAT: ("beat",),
    HookTrigger.FLAG: ("flag",),
}


class HookForm(StudioForm):
    trigger_value = AssembledField(label="Trigger")
    area_x = forms.FloatField(required=False, label="Area centre x (cells)")
    area_y = forms.FloatField(required=False, label="Area centre y (cells)")
    area_radius = forms.FloatField(required=False, label="Area radius (cells)")
    keywords = comma_list(help_text="Comma-separated words or phrases.")
    intent = forms.CharField(required=False, max_length=300, help_text="e.g. the player tries to cross the bridge")
    beat = forms.CharField(required=False, max_length=100, label="Beat name")
    flag = forms.CharField(required=False, max_length=100, label="Flag name")

    fieldsets = (
        ("Hook", ("name", "trigger"), "trigger_value"),
        *((f"When {label}", TRIGGER_INPUTS[kind], None) for kind, label in HookTrigger.choices),
        ("What happens", ("presentation", "fallback_enabled", "fallback_guidance"), None),
    )

    class Meta:
        model = Hook
        fields = ["name", "trigger", "trigger_value", "presentation", "fallback_enabled", "fallback_guidance"]
        labels = {"trigger": "Fires when", "fallback_enabled": "Let the model write an outcome when no branch fits"}
        help_texts = {
            "name": "A short name without spaces, e.g. guardian.",
            "presentation": "What the world shows or says when the hook fires.",
        }
        widgets = {
            "presentation": forms.Textarea(attrs={"rows": 3}),
            "fallback_guidance": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *arguments: Any, **options: Any) -> None:
        super().__init__(*arguments, **options)
        value = self.instance.trigger_value
        initial = {f"area_{name}": value.get(name) for name in ("x", "y", "radius")}
        initial |= {name: value.get(name) for name in ("keywords", "intent", "beat", "flag")}
        self.initial.update({name: found for name, found in initial.items() if found is not None})

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        # The world is not an input, so the model form cannot check the per-world constraint itself.
        if Hook.objects.filter(world=self.instance.world, name=name).exclude(pk=self.instance.pk).exists():
            raise ValidationError(f"this world already has a hook called {name}")
        return name

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        trigger = cleaned.get("trigger")
        names = TRIGGER_INPUTS.get(trigger, ())
        if trigger == HookTrigger.AREA:
            cleaned["trigger_value"] = {name.removeprefix("area_"): cleaned.get(name) for name in names}
        else:
            cleaned["trigger_value"] = {name: cleaned.get(name) for name in names}
        return cleaned

    def save_through_service(self, *, owner: User, children: Sequence[ChildRow]) -> Hook:
        if self.instance.pk is None:
            return hook_create(world=self.instance.world, branches=children, **model_values(self))
        return hook_update(hook=self.instance, branches=children, **model_values(self))


class HookBranchForm(StudioForm):
    examples = line_list(label="Example player inputs", help_text="One per line: things a player might type.")
    effects = AssembledField(label="Effects")
    set_flags = comma_list(label="Flags to set")
    reveal_clues = comma_list(label="Clues to reveal", help_text="Clue names, comma-separated.")
    world_events = forms.MultipleChoiceField(
        required=False, choices=kind_choices(SIMPLE_WORLD_EVENTS), widget=forms.CheckboxSelectMultiple
    )
    spawn_object = forms.ChoiceField(
        required=False, choices=[("", "nothing"), *kind_choices(OBJECT_KINDS)], label="Spawn an object"
    )
    move_to_beat = forms.CharField(required=False, max_length=100, label="Move the story to beat")
    narration = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="Guidance for the narration."
    )

    fieldsets = (
        ("Branch", ("name", "intent", "examples"), None),
        (
            "Effects",
            ("set_flags", "reveal_clues", "world_events", "spawn_object", "move_to_beat", "narration"),
            "effects",
        ),
    )

    class Meta:
        model = HookBranch
        fields = ["name", "intent", "examples", "effects"]
        help_texts = {"intent": "What the player means, e.g. the player offers a gift."}

    def __init__(self, *arguments: Any, **options: Any) -> None:
        super().__init__(*arguments, **options)
        effects = self.instance.effects
        events = effects.get("world_events", [])
        self.initial.setdefault("set_flags", effects.get("set_flags", []))
        self.initial.setdefault("reveal_clues", effects.get("reveal_clues", []))
        self.initial.setdefault("world_events", [event.get("kind") for event in events if event.get("kind") != "spawn"])
        spawns = [event.get("object") for event in events if event.get("kind") == "spawn"]
        self.initial.setdefault("spawn_object", spawns[0] if spawns else "")
        self.initial.setdefault("move_to_beat", effects.get("move_to_beat", ""))
        self.initial.setdefault("narration", effects.get("narration", ""))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        events: list[dict[str, Any]] = [{"kind": kind} for kind in cleaned.get("world_events", [])]
        spawn = cleaned.get("spawn_object")
        if spawn:
            # An unchanged spawn keeps the colour it was given elsewhere (an import, the API).
            earlier = [event for event in self.instance.effects.get("world_events", []) if event.get("object") == spawn]
            events.append(earlier[0] if earlier else {"kind": "spawn", "object": spawn})
        effects: dict[str, Any] = {"world_events": events} if events else {}
        for name in ("set_flags", "reveal_clues", "move_to_beat", "narration"):
            if cleaned.get(name):
                effects[name] = cleaned[name]
        cleaned["effects"] = effects
        return cleaned


class StudioInlineFormSet(BaseInlineFormSet):
    """Rows edited with their parent; extra blank rows carry no delete box."""

    @property
    def item_name(self) -> str:
        return str(self.model._meta.verbose_name)

    def rows_kept(self) -> list[models.Model]:
        """The rows the page keeps, in its order: saved ones not marked for deletion, then new ones filled in."""
        deleted = self.deleted_forms
        return [
            form.instance
            for form in self.forms
            if form not in deleted and (form.instance.pk is not None or form.has_changed())
        ]


def children_formset(parent: type[models.Model], form: type[StudioForm]) -> type[StudioInlineFormSet]:
    return forms.inlineformset_factory(
        parent,
        form.Meta.model,
        form=form,
        formset=StudioInlineFormSet,
        extra=1,
        can_delete=True,
        can_delete_extra=False,
        max_num=100,
        validate_max=True,
    )


ClueFormSet = children_formset(Character, ClueForm)
LoreEntryFormSet = children_formset(Lorebook, LoreEntryForm)
HookBranchFormSet = children_formset(Hook, HookBranchForm)


def service_errors_add(form: forms.Form, error: ValidationError) -> None:
    """Put a service's ValidationError on the form: beside its field where the form has one, else at the top."""
    if not hasattr(error, "error_dict"):
        form.add_error(None, error)
        return
    for field, messages in error.error_dict.items():
        form.add_error(field if field in form.fields else None, messages)


@dataclass(frozen=True)
class ErrorItem:
    """One line of a page's error summary; `anchor` is the id of the input it is about, or empty."""

    label: str
    message: str
    anchor: str


def form_error_items(form: forms.BaseForm, prefix: str = "") -> list[ErrorItem]:
    items = [ErrorItem(prefix.rstrip(": "), message, "") for message in form.non_field_errors()]
    for name, messages in form.errors.items():
        if name == NON_FIELD_ERRORS:
            continue
        field = form[name]
        anchor = field.id_for_label or f"{field.auto_id}_0"
        items += [ErrorItem(f"{prefix}{field.label}", message, anchor) for message in messages]
    return items


def errors_summarised(form: forms.BaseForm, formsets: Sequence[StudioInlineFormSet]) -> list[ErrorItem]:
    """Every error on the page, for the summary at its top; each links to its input."""
    items = form_error_items(form)
    for formset in formsets:
        name = formset.item_name.capitalize()
        items += [ErrorItem(f"{name} rows", message, "") for message in formset.non_form_errors()]
        for number, child in enumerate(formset.forms, start=1):
            items += form_error_items(child, f"{name} {number}: ")
    return items


class ImportForm(forms.Form):
    """The studio's import: a file of any format we read, and optionally one of the creator's worlds to add it to."""

    file = forms.FileField(error_messages={"required": "choose a file to import"})
    world = forms.ModelChoiceField(
        queryset=World.objects.none(),
        required=False,
        error_messages={"invalid_choice": "the world to add it to must be one of yours, given by its number"},
    )

    def __init__(self, *arguments: Any, owner: User, **options: Any) -> None:
        super().__init__(*arguments, **options)
        self.fields["world"].queryset = World.objects.filter(owner=owner)

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            raise ValidationError(f"the file is over {MAX_IMPORT_BYTES // 1048576} MiB")
        return upload

    def problems(self) -> str:
        """Every error, each naming its input, as one sentence for the page."""
        return "; ".join(message for messages in self.errors.values() for message in messages)


# A playtest runs inside one page request: these bound how long one can hold a web worker.
MAX_PLAYTEST_INPUTS = 20
MAX_PLAYTEST_INPUT_LENGTH = 300  # what players type in one go is far shorter
PLAYTEST_BUDGET_SECONDS = 10.0  # warm MiniLM classifies an input in milliseconds; a cold or busy one may not


class HookPlaytestForm(forms.Form):
    inputs = line_list(
        label="Sample player inputs",
        help_text=f"One per line; at most {MAX_PLAYTEST_INPUTS} lines of {MAX_PLAYTEST_INPUT_LENGTH} characters.",
        required=True,
    )

    def clean_inputs(self) -> list[str]:
        inputs = self.cleaned_data["inputs"]
        if len(inputs) > MAX_PLAYTEST_INPUTS:
            raise ValidationError(f"{len(inputs)} inputs; a playtest takes at most {MAX_PLAYTEST_INPUTS}")
        too_long = [text for text in inputs if len(text) > MAX_PLAYTEST_INPUT_LENGTH]
        if too_long:
            raise ValidationError(
                f"each input is at most {MAX_PLAYTEST_INPUT_LENGTH} characters; this one has {len(too_long[0])}: "
                f"{too_long[0][:40]!r}…"
            )
        return inputs


@dataclass(frozen=True)
class PlaytestResult:
    """What a hook would do with one player input: the branch (None: the fallback), how it was decided, the scores."""

    text: str
    decision: BranchDecision


def hook_playtest(
    hook: Hook, inputs: list[str], *, embedder: Embedder, budget_seconds: float = PLAYTEST_BUDGET_SECONDS
) -> list[PlaytestResult]:
    """Each input classified into the hook's branches as play classifies it; empty when the hook has no branches.

    Inputs left when `budget_seconds` have passed are not classified: fewer results than inputs means the
    playtest stopped there. Play may ask the language model to break a near-tie; the playtest shows the
    nearer branch instead, since loading a model would keep the creator waiting.
    """
    deadline = time.monotonic() + budget_seconds
    branches = [Branch(branch.name, branch.intent, tuple(branch.examples)) for branch in hook.branches.all()]
    if not branches:
        return []
    classifier = BranchClassifier(branches, embedder)
    results = []
    for text in inputs:
        if time.monotonic() >= deadline:
            break
        results.append(PlaytestResult(text, classifier.classify(text)))
    return results
