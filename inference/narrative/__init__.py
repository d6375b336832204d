"""The narrative engine's pure parts: memory retrieval, prompt assembly, hook branches, live choices, world prompts.

Nothing here stores anything or imports Django: the platform keeps memories and lore in its database, the
worker passes them in, and these functions decide what reaches a prompt and what a player's words mean.
"""
