"""Video world models as engines: models that draw several frames per action (a chunk), at their own resolution,
streamed as video (`EngineFacts.codec` "h264") that the worker encodes."""
