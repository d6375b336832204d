"""Worlds, characters and hooks as creators author them, and the studio they author them in."""
