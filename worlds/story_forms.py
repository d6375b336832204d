"""The studio's story forms: a story of a world, and its beats edited with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from accounts.models import User
from worlds.forms import ChoicesField, StudioForm, children_formset, model_values
from worlds.models import Beat, Story
from worlds.services import ChildRow, story_create, story_update


class StoryForm(StudioForm):
    fieldsets = (("Story", ("title", "opening_scene", "start_beat", "characters"), None),)

    class Meta:
        model = Story
        fields = ["title", "opening_scene", "start_beat", "characters"]
        help_texts = {
            "start_beat": "The name of the beat the story opens on.",
            "characters": "Characters of this world who appear in the story.",
        }
        widgets = {"characters": forms.CheckboxSelectMultiple}

    def __init__(self, *arguments: Any, **options: Any) -> None:
        super().__init__(*arguments, **options)
        # A story can only use the world's characters: a published version holds no others.
        self.fields["characters"].queryset = self.instance.world.characters.order_by("name")

    def save_through_service(self, *, owner: User, children: Sequence[ChildRow]) -> Story:
        characters = self.cleaned_data["characters"]
        if self.instance.pk is None:
            return story_create(world=self.instance.world, beats=children, characters=characters, **model_values(self))
        return story_update(story=self.instance, beats=children, characters=characters, **model_values(self))


class BeatForm(StudioForm):
    choices = ChoicesField()

    fieldsets = (("Beat", ("name", "scene", "goal", "choice_guidance", "choices"), None),)

    class Meta:
        model = Beat
        fields = ["name", "scene", "goal", "choice_guidance", "choices"]
        help_texts = {
            "name": "A short name without spaces, e.g. lamp-room; choices lead to beats by name.",
            "choice_guidance": "What the two generated choices should offer here.",
        }
        widgets = {name: forms.Textarea(attrs={"rows": 2}) for name in ("scene", "goal", "choice_guidance")}


BeatFormSet = children_formset(Story, BeatForm)
