"""Inference: the worker process, the engine interface, our world model and the language-model backends.

Nothing here imports Django: workers run on remote GPU machines with no database or Redis access, and speak
to the platform only through the WebSocket protocol in `inference.protocol`.
"""
