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

RUNNING = 2


class Daphne(ThreadingHTTPServer):
    """Answers /livez at once, and any other page after a while, noting how many pages it held at once."""

    def __init__(self) -> None:
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
            time.sleep(0.1)
            with self.server.lock:
                self.server.inside -= 1
                self.server.served += 1
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def balanced(settings: Settings, tmp_path: Path) -> Iterator[tuple[str, list[Daphne]]]:
    haproxy = shutil.which("haproxy")
    if haproxy is None:
        if os.environ.get("CI_REQUIRE_SERVICES"):
            pytest.fail("CI runs the balancer: it needs haproxy")
        pytest.skip("no haproxy: apt-get install haproxy (.ci/run does)")
    settings.HTTP_REQUESTS_RUNNING = RUNNING
    daphnes = [Daphne(), Daphne()]
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
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{url}/livez", timeout=1).ok:
                    break
            except requests.RequestException:
                time.sleep(0.1)
        yield url, daphnes
    finally:
        balancer.terminate()
        balancer.wait(timeout=10)
        for daphne in daphnes:
            daphne.shutdown()
            daphne.server_close()


def test_pages_wait_at_the_balancer_and_no_daphne_gets_more_than_it_runs_at_once(
    balanced: tuple[str, list[Daphne]],
) -> None:
    url, daphnes = balanced
    with ThreadPoolExecutor(max_workers=24) as clients:
        answers = list(clients.map(lambda number: requests.get(f"{url}/page/{number}", timeout=30), range(24)))
    assert [answer.status_code for answer in answers] == [200] * 24
    assert [daphne.most_inside for daphne in daphnes] == [RUNNING, RUNNING]
    assert sum(daphne.served for daphne in daphnes) == 24
