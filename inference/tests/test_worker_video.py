"""The worker encodes a video engine's frames once per session: key frames at open, when asked, after a reopen."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import av
import pytest

from inference import protocol, worker
from inference.engine import RaycastEngine, RaycastVideoEngine
from inference.language.embedding import HashedWordsEmbedder
from inference.tests.test_video_chunked import CHUNK, HEIGHT, WIDTH, TinyChunkedEngine

SPEC = {"seed": 3, "size": 10}


@pytest.fixture
def video_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[worker.InferenceWorker]:
    """A worker with the two raycasters (JPEG and H.264), a tiny chunked video model and the hashed-words embedder:
    it starts in a blink."""
    engines = {"raycaster": RaycastEngine, "raycaster-video": RaycastVideoEngine, "tiny-chunked": TinyChunkedEngine}
    monkeypatch.setattr(worker, "available_engines", lambda: engines)
    monkeypatch.setattr(worker, "create_engine", lambda name, **options: engines[name](**options))
    monkeypatch.setattr(worker, "default_embedder", HashedWordsEmbedder)
    inference_worker = worker.InferenceWorker(worker.WorkerConfig(url="ws://unused/", token="t", language_model="none"))
    yield inference_worker
    inference_worker.threads_stop()


def ticked(inference_worker: worker.InferenceWorker) -> dict[str, tuple[protocol.FrameHeader, bytes]]:
    """One tick's frames by session, as the wire carries them: the header read, the picture after it."""
    frames, _ = inference_worker.tick_encoded()
    return {
        session: (protocol.frame_decode(data), data[protocol.WORKER_FRAME_HEADER.size :]) for session, _, data in frames
    }


def test_video_sessions_stream_h264_from_a_key_frame_and_jpeg_sessions_stay_jpeg(
    video_worker: worker.InferenceWorker,
) -> None:
    video, jpeg = str(uuid.uuid4()), str(uuid.uuid4())
    video_worker.handle(protocol.SessionOpen(session=video, engine="raycaster-video", spec=SPEC))
    video_worker.handle(protocol.SessionOpen(session=jpeg, engine="raycaster", spec=SPEC))
    decoder = av.CodecContext.create("h264", "r")
    for tick in range(8):
        frames = ticked(video_worker)
        header, picture = frames[video]
        assert (header.codec, header.key) == ("h264", tick == 0)
        (decoded,) = decoder.decode(av.Packet(picture))
        assert (decoded.width, decoded.height) == (640, 352)
        assert (frames[jpeg][0].codec, frames[jpeg][0].key) == ("jpeg", True)
        assert frames[jpeg][1][:2] == b"\xff\xd8"  # a JPEG's start-of-image marker
    # A viewer arrives: the platform asks, and the next frame is a key frame (the last was 7 frames ago).
    assert video_worker.handle(protocol.SessionKeyFrame(session=video)) == []
    assert video_worker.handle(protocol.SessionKeyFrame(session=jpeg)) == []  # JPEG frames all are: nothing to do
    assert ticked(video_worker)[video][0].key
    assert not ticked(video_worker)[video][0].key


def test_a_session_closed_or_opened_anew_gets_a_new_encoder_whose_first_frame_is_a_key_frame(
    video_worker: worker.InferenceWorker,
) -> None:
    video = str(uuid.uuid4())
    video_worker.handle(protocol.SessionOpen(session=video, engine="raycaster-video", spec=SPEC))
    assert [ticked(video_worker)[video][0].key for _ in range(3)] == [True, False, False]
    video_worker.handle(protocol.SessionClose(session=video))
    assert ticked(video_worker) == {}
    assert video not in video_worker.encoders
    video_worker.handle(protocol.SessionOpen(session=video, engine="raycaster-video", spec=SPEC))
    assert [ticked(video_worker)[video][0].key for _ in range(2)] == [True, False]


def test_a_chunked_engine_streams_one_decodable_h264_frame_a_tick_through_the_worker(
    video_worker: worker.InferenceWorker,
) -> None:
    session = str(uuid.uuid4())
    video_worker.handle(protocol.SessionOpen(session=session, engine="tiny-chunked", spec=SPEC))
    decoder = av.CodecContext.create("h264", "r")
    numbers = []
    for tick in range(3 * CHUNK):
        frames = ticked(video_worker)
        assert list(frames) == [session]  # one frame a tick though the model draws CHUNK at a time
        header, picture = frames[session]
        assert (header.codec, header.key) == ("h264", tick == 0)
        (decoded,) = decoder.decode(av.Packet(picture))
        assert (decoded.width, decoded.height) == (WIDTH, HEIGHT)
        numbers.append(header.number)
    assert numbers == sorted(set(numbers))
