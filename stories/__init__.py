"""Interactive stories, play sessions, their event logs and snapshots, and character memories."""
