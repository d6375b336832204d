"""Play sessions: who plays which published version on which worker, their input log and their snapshots."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class SessionStatus(models.TextChoices):
    QUEUED = "queued", "waiting for a worker"
    RUNNING = "running", "running"
    # Nobody is watching: the worker let it go; it reopens from its snapshot and log when someone returns.
    PARKED = "parked", "parked"
    ENDED = "ended", "ended"


class PlaySession(models.Model):
    """One play of one published version: who plays, which worker runs it, how far it has come.

    Its id is a random UUID: it appears in URLs and must not be guessable. There is no time limit; a session
    left for days resumes from its last snapshot.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    version = models.ForeignKey("worlds.WorldVersion", on_delete=models.PROTECT, related_name="sessions")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="play_sessions")
    # Live worlds: everyone who joined with an avatar; spectators watch without being listed.
    participants = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="live_sessions")
    is_live = models.BooleanField(default=False)
    status = models.CharField(max_length=8, choices=SessionStatus.choices, default=SessionStatus.QUEUED)
    engine = models.CharField(max_length=60)
    worker = models.ForeignKey(
        "workers.WorkerNode", null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions"
    )
    queued_at = models.DateTimeField(null=True, blank=True)
    # The newest frame the platform has seen: a reopened session replays up to it, and numbering continues.
    last_frame = models.PositiveBigIntegerField(default=0)
    # The sequence number of the newest logged input: raised in one UPDATE, whose row lock orders concurrent
    # inputs (a Live world's players) for only as long as their insert takes.
    last_sequence = models.PositiveIntegerField(default=0)
    ended_reason = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_active_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["status", "queued_at"]), models.Index(fields=["worker", "status"])]

    def __str__(self) -> str:
        return f"{self.version} session {self.id}"


class SessionEvent(models.Model):
    """One input (or story event) of a session, logged before it is forwarded; never changed but to record
    the tick it was applied at and what it became (world events, story state), which replay relies on."""

    session = models.ForeignKey(PlaySession, on_delete=models.CASCADE, related_name="events")
    sequence = models.PositiveIntegerField()
    player = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    # The page that sent it (a random id each page load picks, play.protocol.BROWSER_ID): `client_sequence`
    # counts per page, so a player's two tabs both send seq 1. Blank for inputs logged before it was kept, and
    # for clients that send none; those are told apart per player.
    browser = models.CharField(max_length=64, blank=True, default="")
    client_sequence = models.PositiveIntegerField(null=True)
    kind = models.CharField(max_length=20)
    payload = models.JSONField()
    applied_tick = models.PositiveBigIntegerField(null=True)
    applied_effects = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["sequence"]
        constraints = [
            models.UniqueConstraint(fields=["session", "sequence"], name="event_sequence_unique_per_session"),
            # A browser resending after a reconnect must not log the same input twice.
            models.UniqueConstraint(
                fields=["session", "player", "browser", "client_sequence"], name="client_sequence_unique_per_browser"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.session_id} #{self.sequence} {self.kind}"


class NarrationLine(models.Model):
    """A line the session's narrator told all its browsers (a world change, a scene, a hook's outcome): what a
    reloaded page shows of the story so far. The worker keeps where the story stands, not what it said."""

    session = models.ForeignKey(PlaySession, on_delete=models.CASCADE, related_name="narration")
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.text[:40]}"


class SessionSnapshot(models.Model):
    """A session's engine state and narrative state at a tick, with the last input applied by then."""

    session = models.ForeignKey(PlaySession, on_delete=models.CASCADE, related_name="snapshots")
    tick = models.PositiveBigIntegerField()
    sequence = models.PositiveIntegerField()
    engine_state = models.BinaryField()
    narrative = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-tick", "-pk"]  # see play.selectors.SNAPSHOTS_NEWEST_FIRST

    def __str__(self) -> str:
        return f"{self.session_id} @ {self.tick}"
