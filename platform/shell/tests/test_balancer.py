"""The balancer's configuration, run by a real HAProxy in front of two stand-in daphnes."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from pytest_django.fixtures import Settings

from shell.cluster import ClusterShape, free_port, haproxy_config
from shell.front import BUSY

RUNNING = 2


class Daphne(ThreadingHTTPServer):
    """Answers /livez at once, and any other page after a while, noting how many pages it held at once."""

    def __init__(self, page_seconds: float) -> None:
        self.page_seconds = page_seconds
        self.lock = threading.Lock()
        self.inside = 0
        self.most_inside = 0
        self.served = 0
        super().__init__(("127.0.0.1", 0), PageHandler)


class PageHandler(BaseHTTPRequestHandler):
    server: Daphne

    def do_GET(self) -> None:
        if self.path != "/livez":
            with self.server.lock:
                self.server.inside += 1
                self.server.most_inside = max(self.server.most_inside, self.server.inside)
            time.sleep(self.server.page_seconds)
            with self.server.lock:
                self.server.inside -= 1
                self.server.served += 1
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *_: object) -> None:
        pass


def answering(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).ok
    except requests.RequestException:
        return False


@pytest.fixture
def page_seconds() -> float:
    return 0.1


@pytest.fixture
def balanced(settings: Settings, tmp_path: Path, page_seconds: float) -> Iterator[tuple[str, list[Daphne]]]:
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        if os.environ.get("CI_REQUIRE_SERVICES"):
            pytest.fail("CI runs the balancer: it needs haproxy")
        pytest.skip("no haproxy: apt-get install haproxy (.ci/run does)")
    settings.HTTP_REQUESTS_RUNNING = RUNNING
    settings.HTTP_REQUEST_WAIT_SECONDS = 0.5
    daphnes = [Daphne(page_seconds), Daphne(page_seconds)]
    for daphne in daphnes:
        threading.Thread(target=daphne.serve_forever, daemon=True).start()
    port = free_port("127.0.0.1")
    config = tmp_path / "haproxy.cfg"
    shape = ClusterShape(daphnes=2, workers=0, port=port)
    config.write_text(haproxy_config(shape, [daphne.server_address[1] for daphne in daphnes]))
    balancer = subprocess.Popen([haproxy, "-db", "-f", str(config)], stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while not answering(f"{url}/livez"):
            assert balancer.poll() is None, "HAProxy refused the configuration"
            assert time.monotonic() < deadline, "HAProxy did not answer within 10 s"
            time.sleep(0.1)
        yield url, daphnes
    finally:
        balancer.terminate()
        balancer.wait(timeout=10)
        for daphne in daphnes:
            daphne.shutdown()
            daphne.server_close()


# 24 pages, 4 at a time: the last of six waves waits five pages' time at HAProxy, half the 0.5 s budget (at
# 0.1 s a page it waited the whole budget, and a slow moment of the machine made it a 503).
@pytest.mark.parametrize("page_seconds", [0.05])
def test_pages_wait_at_the_balancer_and_no_daphne_gets_more_than_it_runs_at_once(
    balanced: tuple[str, list[Daphne]],
) -> None:
    url, daphnes = balanced
    with ThreadPoolExecutor(max_workers=24) as clients:
        answers = list(clients.map(lambda number: requests.get(f"{url}/page/{number}", timeout=30), range(24)))
    assert [answer.status_code for answer in answers] == [200] * 24
    assert [daphne.most_inside for daphne in daphnes] == [RUNNING, RUNNING]
    assert sum(daphne.served for daphne in daphnes) == 24


@pytest.mark.parametrize("page_seconds", [3.0])
def test_a_page_that_waits_past_its_budget_is_told_the_server_is_busy_as_a_daphne_tells_it(
    balanced: tuple[str, list[Daphne]],
) -> None:
    url, _ = balanced
    with ThreadPoolExecutor(max_workers=2 * RUNNING + 2) as clients:
        answers = list(clients.map(lambda number: requests.get(f"{url}/page/{number}", timeout=30), range(6)))
    refused = [answer for answer in answers if answer.status_code == 503]
    assert len(refused) == 2, [answer.status_code for answer in answers]
    assert all(answer.text == BUSY and answer.headers["Retry-After"] == "1" for answer in refused)
