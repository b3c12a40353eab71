"""Render time of every dashboard page in a real browser: cold, p50 and p95 per page.

Starts ``ace app`` on a free port against the configured Neo4j (whatever the
graph holds: build a large one first with ``benchmarks/query_bench.py``, which
stores 1,000,000 rollouts over 10 scopes by default), then drives Debian's
Chromium through Playwright.  Each sample is a full page load: from
``page.goto`` until Streamlit's script run has finished, no placeholder
(skeleton) is left, the page's key text is visible and, on the skill graph,
the network canvas is drawn.  The first load of each page after the server
starts is reported separately (``cold``: the query cache is empty); the
``--runs`` loads after it hit the cached queries (``--ttl`` seconds, default
300 so the whole run stays inside it; ``--ttl 0`` measures every load
uncached).  The goal printed beside each page is p95 ≤ 1000 ms.

Baseline: a bare Streamlit page (a title and one line, no data, no ACE code),
served by its own ``streamlit run`` and loaded the same way first.  Its time
is the floor of a full page load on the machine at that moment; each page's
p50 is printed as a multiple of it, so a run on a busy machine still says how
much of a page's time is ACE's.

    export ACE_HOME=/tmp/ace-bench ACE_NEO4J_BOLT_PORT=17687 ACE_NEO4J_HTTP_PORT=17474
    .venv/bin/python benchmarks/query_bench.py               # load 1M rollouts (long), or --keep
    flock /tmp/ace-bench.lock .venv/bin/python benchmarks/app_bench.py --runs 20

A second table measures moving between pages inside the app, as a user does
after the first load: a click on the page's link in the sidebar, until the page
is rendered the same way (the scope and level come from the session, as they
do for a user; Streamlit keeps its websocket and JS, so there is no bare-page
floor to pay).  Each sample starts on another page (the Overview, or the
Synthesis page for the Overview itself), reached untimed.

``--quick`` (CI smoke): one cached load and one move per page after the
first, the same pages, floor and table.

    .venv/bin/python benchmarks/app_bench.py --quick

Nothing is written to the graph (the app reads only) or into the repository.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._common import machine_facts  # noqa: E402

GOAL_P95_MS = 1000.0
PAGES = {  # URL path -> text the page must show once rendered
    "": "Five weakest compositions",
    "Skill_graph": "Fragile edges in view",
    "Weak_compositions": "Near-success rollouts",
    "Capability_history": "Compositions across checkpoints",
    "Synthesis": "Plans aimed at the frontier",  # not "Synthesis": the sidebar's link says that on every page
    "Training": "Evaluation per checkpoint",
    "Query_console": "Cypher",
}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_rendered(pg, path: str, text: str, timeout_ms: float = 120_000) -> None:
    """Until the script run is over, no skeleton is left and the key text shows (and the graph is drawn)."""
    pg.get_by_text(text, exact=False).first.wait_for(timeout=timeout_ms)
    pg.wait_for_function(
        "() => { const app = document.querySelector('[data-testid=\"stApp\"]');"
        " return app && app.getAttribute('data-test-script-state') === 'notRunning'"
        " && !document.querySelector('[data-testid=\"stSkeleton\"]'); }",
        timeout=timeout_ms,
    )
    if path == "Skill_graph":
        pg.frame_locator("iframe").first.locator("#mynetwork canvas").wait_for(timeout=timeout_ms)


#: The baseline: a Streamlit page with one line of text and no data, served and loaded the same way.
#: What it costs is the floor of a full page load on this machine (JS bundle, websocket, one script run).
FLOOR_SCRIPT = 'import streamlit as st\nst.title("Bare page")\nst.write("Nothing to show")\n'
FLOOR_TEXT = "Nothing to show"


def start_app(port: int, ttl: int, floor: bool = False) -> subprocess.Popen:
    ace = Path(sys.executable).parent / "ace"
    log = tempfile.NamedTemporaryFile(prefix="ace-app-bench-", suffix=".log", delete=False)
    if floor:
        script = Path(tempfile.mkdtemp(prefix="ace-app-bench-floor-")) / "bare.py"
        script.write_text(FLOOR_SCRIPT)
        cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.address", "127.0.0.1",
               "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
               "--server.fileWatcherType", "none", "--global.developmentMode", "false"]
    else:
        cmd = [str(ace), "app", "--port", str(port), "--ttl", str(ttl)]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
        if proc.poll() is not None:
            break
    proc.kill()
    sys.exit(f"`ace app` did not start; see {log.name}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20, help="timed (cached) loads per page after the cold one")
    ap.add_argument("--ttl", type=int, default=300, help="query cache TTL of the app under test, seconds")
    ap.add_argument("--scope", default=None, help="scope key to show (default: the newest, as the app picks)")
    ap.add_argument("--level", default="tool", choices=["skill", "tool"])
    ap.add_argument("--chromium", default=os.environ.get("ACE_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--quick", action="store_true", help="smoke run: --runs 1 (one cached load per page)")
    args = ap.parse_args(argv)
    if args.quick:
        args.runs = 1
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    from playwright.sync_api import sync_playwright

    from ace_graph.config import neo4j_settings
    from ace_graph.db import get_driver
    from ace_graph.store import GraphStore

    settings = neo4j_settings()
    driver = get_driver(settings)
    print(machine_facts(driver, settings.database))
    scopes = GraphStore(driver, settings.database).run("view-scopes")  # newest first, as the app lists them
    if not scopes:
        sys.exit("The graph holds no scope; load one first (benchmarks/query_bench.py or `ace demo`).")
    scope = args.scope or scopes[0]["key"]
    with driver.session(database=settings.database) as s:
        rollouts = s.run("MATCH (r:Rollout) RETURN count(r) AS n").single()["n"]
    driver.close()
    print(f"graph: {rollouts:,} rollouts stored in {len(scopes)} scopes; pages show {scope} at {args.level} level; "
          f"query cache TTL {args.ttl} s", flush=True)

    def summary(label: str, times: list[float], first: str, name: str | None = None) -> tuple[str, float, float, float, float]:
        """(name, first, p50, p95, max) of one page's samples; the first sample is reported apart."""
        cold, warm = times[0], sorted(times[1:])
        p95 = warm[min(len(warm) - 1, max(0, round(0.95 * len(warm)) - 1))]
        print(f"  {label}: {first} {cold:.0f} ms, p95 {p95:.0f} ms", flush=True)
        return name or label, cold, statistics.median(warm), p95, warm[-1]

    def measure(pg, name: str, url: str, path: str, text: str) -> tuple[str, float, float, float, float]:
        times = []
        for _ in range(args.runs + 1):
            t0 = time.perf_counter()
            pg.goto(url)
            wait_rendered(pg, path, text)
            times.append((time.perf_counter() - t0) * 1000)
            if pg.locator("[data-testid='stException']").count():
                sys.exit(f"page {name} raised an exception")
        return summary(name, times, "cold")

    def navigate(pg, name: str, path: str, text: str) -> tuple[str, float, float, float, float]:
        """Click the sidebar link of ``path`` from another page, ``--runs`` + 1 times (the first is cold)."""
        def link(target: str):
            return pg.locator(f'[data-testid="stSidebarNavLink"][href$="/{target}"]').first

        away, away_text = ("Synthesis", PAGES["Synthesis"]) if path == "" else ("", PAGES[""])
        times = []
        for _ in range(args.runs + 1):
            link(away).click()
            wait_rendered(pg, away, away_text)
            t0 = time.perf_counter()
            link(path).click()
            pg.wait_for_url(lambda url, p=path: url.split("?")[0].rstrip("/").endswith(p) if p else
                            url.split("?")[0].rstrip("/").count("/") == 2)
            wait_rendered(pg, path, text)
            times.append((time.perf_counter() - t0) * 1000)
            if pg.locator("[data-testid='stException']").count():
                sys.exit(f"page {name} raised an exception after navigation")
        return summary(f"{name} (navigation)", times, "first", name)

    results, moves = [], []
    with tempfile.TemporaryDirectory(prefix="ace-bench-chromium-") as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            profile, executable_path=args.chromium, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1500, "height": 1000})
        try:
            pg = ctx.new_page()
            for floor in (True, False):  # the bare page first, then ACE's pages, one server each
                port = free_port()
                proc = start_app(port, args.ttl, floor=floor)
                base = f"http://127.0.0.1:{port}"
                try:
                    if floor:
                        results.append(measure(pg, "baseline: bare page", f"{base}/", "", FLOOR_TEXT))
                        continue
                    for path, text in PAGES.items():
                        url = f"{base}/{path}?scope={scope}&level={args.level}"
                        results.append(measure(pg, path or "Overview", url, path, text))
                    # In-app navigation: the session holds the scope and level from the loads above.
                    pg.goto(f"{base}/?scope={scope}&level={args.level}")
                    wait_rendered(pg, "", PAGES[""])
                    for path, text in PAGES.items():
                        moves.append(navigate(pg, path or "Overview", path, text))
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
        finally:
            ctx.close()

    floor_p50 = results[0][2]
    print(f"\n== page render in Chromium (full page load), {args.runs} cached loads per page after 1 cold ==")
    print(f"{'page':<22}{'cold ms':>9}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'p50/bare':>10}   goal p95 <= {GOAL_P95_MS:.0f} ms")
    for name, cold, p50, p95, mx in results:
        print(f"{name:<22}{cold:>9.0f}{p50:>9.0f}{p95:>9.0f}{mx:>9.0f}{p50 / floor_p50:>9.1f}x   "
              f"{'MET' if p95 <= GOAL_P95_MS else 'MISSED'}")
    print(f"\n== moving to each page inside the app (sidebar link, after a full load), {args.runs} moves after 1 first ==")
    print(f"{'page':<22}{'first ms':>9}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}   goal p95 <= {GOAL_P95_MS:.0f} ms")
    for name, first, p50, p95, mx in moves:
        print(f"{name:<22}{first:>9.0f}{p50:>9.0f}{p95:>9.0f}{mx:>9.0f}   {'MET' if p95 <= GOAL_P95_MS else 'MISSED'}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
