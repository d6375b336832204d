"""What an inference worker runs for play sessions: the session host, prompt and story handling.

Pure Python over the engine interface; the worker process (inference.worker) feeds it messages from the
platform and sends back what it produces.
"""
