"""Inference workers known to the platform, each with its own secret token."""

from __future__ import annotations

from django.db import models


class WorkerNode(models.Model):
    """An inference worker process: its credentials, what it announced, and when it was last heard from."""

    name = models.SlugField(max_length=100, unique=True)
    # SHA-256 of the token: the token itself is shown once to the operator and never stored.
    token_hash = models.CharField(max_length=64, unique=True)
    # After this the token is refused at the handshake; a worker already connected keeps its connection.
    token_expires_at = models.DateTimeField()
    engines = models.JSONField(default=list, blank=True)
    # By engine: what it needs and streams (device, frame size and rate, codec, weights), as announced.
    engine_facts = models.JSONField(default=dict, blank=True)
    slots = models.PositiveIntegerField(default=0)
    free_slots = models.PositiveIntegerField(default=0)
    device = models.CharField(max_length=100, blank=True)
    channel_name = models.CharField(max_length=200, blank=True)
    connected_at = models.DateTimeField(null=True, blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    disconnected_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["last_heartbeat_at"])]

    def __str__(self) -> str:
        return self.name
