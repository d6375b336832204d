"""The inputs a player sends: the keys a world understands and the kinds of input a session applies.

Written once here; the platform checks browsers' inputs against these names and hands the page its keys.
"""

from __future__ import annotations

# Browser `KeyboardEvent.code` names, the same whatever the keyboard layout: forward, strafe left, back, strafe
# right, turn left, turn right (inference.world.state.KEY_ACTIONS maps them to actions in this order).
KEYS = ("KeyW", "KeyA", "KeyS", "KeyD", "ArrowLeft", "ArrowRight")
# What a player's browser may send; the platform logs each, numbered in the session's sequence.
PLAYER_INPUT_TYPES = ("key_down", "key_up", "prompt", "choice", "speech", "pause", "resume")
# What a worker's narrative work may propose as the next input (inference.protocol.Proposal).
PROPOSAL_INPUT_TYPES = ("offer", "hook_outcome", "own_choice")
