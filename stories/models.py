"""Interactive stories: a graph of beats, each with a goal, guidance for the choices to generate, and exits."""

from __future__ import annotations

from django.db import models

from worlds import validation
from worlds.models import Character, World, bounded_text


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
