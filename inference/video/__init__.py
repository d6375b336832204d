"""Video on the worker: the encoder that turns a video engine's pixels into H.264 or VP8 packets once per
session (`encoder.py`), and the engines that draw at their own resolution, several frames per action (a chunk):
the chunked base and Matrix-Game 2.0."""
