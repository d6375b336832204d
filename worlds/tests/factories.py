from __future__ import annotations

import factory

from accounts.tests.factories import UserFactory
from worlds.models import Beat, Character, Clue, Hook, HookBranch, Lorebook, LoreEntry, Story, World


class WorldFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = World

    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda number: f"Harbour {number}")
    slug = factory.Sequence(lambda number: f"harbour-{number}")
    logline = "A foggy harbour where the lighthouse keeper waits."
    engine_parameters = factory.LazyFunction(lambda: {"seed": 7, "size": 16, "time_of_day": "dawn"})


class LorebookFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Lorebook

    owner = factory.SubFactory(UserFactory)
    name = "Harbour lore"


class LoreEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LoreEntry

    lorebook = factory.SubFactory(LorebookFactory)
    keys = factory.LazyFunction(lambda: ["lighthouse"])
    content = "The lighthouse has been dark since the storm."


class CharacterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Character

    owner = factory.SubFactory(UserFactory)
    name = "Eve"
    persona = "The lighthouse keeper, patient and watchful."
    greeting = "You came in with the fog."


class ClueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Clue

    character = factory.SubFactory(CharacterFactory)
    name = "the-key"
    text = "The key to the lamp room hangs under the stairs."
    condition = "keyword"
    condition_value = "key"


class HookFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Hook

    world = factory.SubFactory(WorldFactory)
    name = "guardian"
    trigger = "keywords"
    trigger_value = factory.LazyFunction(lambda: {"keywords": ["bridge"]})
    presentation = "A stone guardian blocks the bridge and asks for a gift."


class HookBranchFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = HookBranch

    hook = factory.SubFactory(HookFactory)
    name = "gift"
    intent = "the player offers a gift"
    examples = factory.LazyFunction(lambda: ["I give you my lantern", "take this coin"])
    effects = factory.LazyFunction(lambda: {"set_flags": ["guardian_pleased"], "world_events": [{"kind": "dawn"}]})


class StoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Story

    world = factory.SubFactory(WorldFactory)
    title = "The dark lighthouse"
    start_beat = "arrival"


class BeatFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Beat

    story = factory.SubFactory(StoryFactory)
    name = factory.Sequence(lambda number: f"beat-{number}")
