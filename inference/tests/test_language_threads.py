"""The worker's threads: torch's threads are set on purpose on every one that runs torch, not left to the
process; the calls waiting for one run the most urgent first."""

from __future__ import annotations

import argparse
import threading
import time

import pytest
import torch

from inference import worker
from inference.play.narrator import Urgency


def test_every_thread_of_the_worker_runs_torch_on_the_configured_thread_count() -> None:
    torch.set_num_threads(2)  # what the process had: two cores
    config = worker.WorkerConfig(url="ws://unused/", token="t", language_model="none", torch_threads=1)
    inference_worker = worker.InferenceWorker(config)
    try:
        for thread in (inference_worker.engine_thread, inference_worker.language_thread):
            assert thread.submit(torch.get_num_threads).result(timeout=30) == 1, thread.thread.name
        assert torch.get_num_threads() == 1  # the thread that loaded the engines and the embedder
    finally:
        inference_worker.threads_stop()
        torch.set_num_threads(2)


def test_the_thread_count_comes_from_the_environment_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    def parsed(*argv: str) -> worker.WorkerConfig:
        parser = argparse.ArgumentParser()
        worker.add_arguments(parser)
        return worker.config_from_arguments(parser.parse_args(["--url", "ws://x/", "--token", "t", *argv]))

    monkeypatch.delenv("WORLDLOOM_TORCH_THREADS", raising=False)
    assert parsed().torch_threads == 1
    monkeypatch.setenv("WORLDLOOM_TORCH_THREADS", "4")
    assert parsed().torch_threads == 4
    assert parsed("--torch-threads", "2").torch_threads == 2


def test_waiting_calls_run_the_most_urgent_first_and_otherwise_in_order() -> None:
    thread = worker.SerialThread("test")
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []
    try:
        thread.submit(lambda: (started.set(), release.wait(5)))
        assert started.wait(5)
        for name, urgency in (
            ("choices", Urgency.AHEAD),
            ("narration", Urgency.ROUTINE),
            ("reply", Urgency.PLAYER_WAITS),
        ):
            thread.submit(ran.append, name, urgency=urgency)
        thread.submit(ran.append, "second reply", urgency=Urgency.PLAYER_WAITS)
        release.set()
        thread.submit(lambda: None, urgency=Urgency.AHEAD).result(timeout=5)
        assert ran == ["reply", "second reply", "narration", "choices"]
    finally:
        release.set()
        thread.stop()


def test_a_long_call_lets_the_urgent_calls_waiting_run_in_its_middle_and_only_those() -> None:
    thread = worker.SerialThread("test")
    halfway, go_on = threading.Event(), threading.Event()
    ran: list[str] = []
    busy: list[float] = []

    def choices_written() -> None:
        ran.append("first choice")
        halfway.set()
        go_on.wait(5)
        thread.urgent_run()
        busy.append(thread.busy_seconds(time.monotonic()))
        ran.append("second choice")

    try:
        written = thread.submit(choices_written, urgency=Urgency.AHEAD)
        assert halfway.wait(5)
        thread.submit(ran.append, "narration")
        thread.submit(lambda: (ran.append("reply"), time.sleep(0.3)), urgency=Urgency.PLAYER_WAITS)
        go_on.set()
        written.result(timeout=5)
        thread.submit(lambda: None).result(timeout=5)
        assert ran == ["first choice", "reply", "second choice", "narration"]
        assert busy[0] < 0.3  # the reply's time is not the interrupted call's
    finally:
        go_on.set()
        thread.stop()


def test_urgent_calls_run_only_from_the_threads_own_call() -> None:
    thread = worker.SerialThread("test")
    try:
        with pytest.raises(AssertionError):
            thread.urgent_run()
    finally:
        thread.stop()
