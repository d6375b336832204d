"""torch's threads are set on purpose on every worker thread that runs torch, not left to the process."""

from __future__ import annotations

import argparse

import pytest
import torch

from inference import worker


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
