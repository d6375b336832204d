"""The gallery's four categories; every published work belongs to one."""

from __future__ import annotations

from django.db import models


class Category(models.TextChoices):
    GAMES = "games", "Games"
    STORIES = "stories", "Stories"
    CHARACTERS = "characters", "Characters"
    LIVE = "live", "Live"


CATEGORY_BLURBS = {
    Category.GAMES: "Worlds you walk through in real time: move with W A S D, turn with the arrow keys.",
    Category.STORIES: "Interactive movies: the world plays out and you pick between choices written live.",
    Category.CHARACTERS: "Characters to talk to, who remember you from one conversation to the next.",
    Category.LIVE: "Shared worlds that keep running: join as an avatar with everyone else, or watch.",
}
