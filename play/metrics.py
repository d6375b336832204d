"""What play measures for operators, as Prometheus metrics (served at /metrics by the site shell).

Counters and histograms are observed where the events happen (the browser consumer, in every daphne process);
with several processes, `PROMETHEUS_MULTIPROC_DIR` makes prometheus-client keep them in files that /metrics
adds up. Counts of sessions and worker slots are read from the database when /metrics is scraped.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

# Buckets in seconds around the 150 ms input-to-frame target and a 50 ms frame interval at 20 fps.
LATENCY_BUCKETS = (0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0)
REPLY_BUCKETS = (0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0, 30.0, 60.0)

INPUT_TO_FRAME = Histogram(
    "worldloom_input_to_frame_seconds",
    "From an input accepted to the first frame that applied it, as a browser's daphne process sent it",
    buckets=LATENCY_BUCKETS,
)
FRAME_INTERVAL = Histogram(
    "worldloom_frame_interval_seconds",
    "Between two consecutive frames a browser's daphne process received for it",
    buckets=LATENCY_BUCKETS,
)
FRAMES_DROPPED = Counter(
    "worldloom_frames_dropped_total", "Frames replaced by a newer one before a slow reader could take them"
)
INPUTS_REFUSED = Counter("worldloom_inputs_refused_total", "Inputs refused by a browser's rate limit")
REPLY_LATENCY = Histogram(
    "worldloom_reply_first_line_seconds",
    "From a player's words accepted to the character's first line reaching their daphne process",
    buckets=REPLY_BUCKETS,
)
