"""The dashboard served for real-browser tests: ``ace app`` on a free loopback port, and waiting for a page.

Shared by the integration tests that drive Chromium (test_app, test_compare_policies).  A server that does
not come up fails the test with its log's tail; it is stopped when the ``with`` block ends.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served_app(timeout: float = 90) -> Iterator[str]:
    """``ace app`` on a free port: yields its URL once its health check answers."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="ace-app-", suffix=".log", delete=False)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "ace"), "app", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + timeout
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                out = Path(log.name).read_text(errors="replace")
                pytest.fail(f"`ace app` did not come up on {url}: {out[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def settle(pg: Any, text: str, timeout: float = 90_000) -> None:
    """Wait for the page's script run to finish and ``text`` to show."""
    pg.wait_for_selector("[data-testid='stApp']", timeout=timeout)
    pg.get_by_text(text, exact=False).first.wait_for(timeout=timeout)
    pg.wait_for_function(
        "() => { const app = document.querySelector('[data-testid=\"stApp\"]');"
        " return app && app.getAttribute('data-test-script-state') === 'notRunning'"
        " && !document.querySelector('[data-testid=\"stSkeleton\"]'); }", timeout=timeout)


#: The browser the Chromium tests drive, and its flags.
CHROMIUM = os.environ.get("ACE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def chromium_page(height: int) -> Iterator[Any]:
    """A page of a headless Chromium (ACE_CHROMIUM) on a profile of its own, 1500 pixels wide and ``height``
    high; the browser is closed when the ``with`` block ends."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="ace-chromium-") as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                   args=CHROMIUM_ARGS, viewport={"width": 1500, "height": height})
        try:
            yield ctx.new_page()
        finally:
            ctx.close()
