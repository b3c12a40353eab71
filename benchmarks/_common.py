"""Helpers shared by the benchmark scripts (run them as `python benchmarks/NAME.py`)."""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path
from typing import Any, Callable


def machine_facts(driver: Any = None, database: str = "neo4j") -> str:
    import neo4j

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split("\n")[0].split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    version = "?"
    if driver is not None:
        with driver.session(database=database) as s:
            rec = s.run("CALL dbms.components() YIELD name, versions, edition "
                        "RETURN name, versions[0] AS v, edition").single()
            version = f"{rec['name']} {rec['v']} {rec['edition']}"
    return (f"machine: {os.cpu_count()} cores ({cpu}){mem}; load avg {os.getloadavg()[0]:.2f}\n"
            f"python {platform.python_version()}, neo4j driver {neo4j.__version__}, server {version}")


def quick_workspace(prefix: str) -> tuple[Path, str]:
    """What every benchmark's ``--quick`` (CI smoke) starts from: a temporary folder, removed when the
    process exits, and a tiny model built offline inside it (:func:`train.tiny.build_tiny_model`); returns
    the folder and the model's path."""
    import atexit
    import shutil
    import tempfile

    from train.tiny import build_tiny_model

    work = Path(tempfile.mkdtemp(prefix=f"ace-{prefix}-quick-"))
    atexit.register(shutil.rmtree, work, True)
    return work, str(build_tiny_model(work / "tiny"))


def quick_option(ap: argparse.ArgumentParser, cuts: str) -> None:
    """``--quick``, a model benchmark's smoke run (CI): ``cuts`` says what it runs less of (:func:`quick_run`)."""
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: a tiny model built offline, {cuts}, results in a temporary folder "
                         "(never --out's default)")


def quick_run(args: argparse.Namespace, prefix: str, out_name: str) -> Path | None:
    """With ``--quick``: the folder :func:`quick_workspace` made, its tiny model as ``args.model`` and ``args.out``
    the file ``out_name`` inside it; without it None, and ``args`` as they were."""
    if not args.quick:
        return None
    work, args.model = quick_workspace(prefix)
    args.out = work / out_name
    return work


def result_file(path: Path, fresh: Callable[[], dict[str, Any]],
                **dump: Any) -> tuple[dict[str, Any], Callable[[], None]]:
    """A benchmark's result, resumed across runs: what an earlier run left at ``path`` (else ``fresh()``), and
    a ``save()`` that writes it there whole (indented JSON; ``dump`` goes to ``json.dumps``).  Makes the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    result = json.loads(path.read_text()) if path.is_file() else fresh()

    def save() -> None:
        path.write_text(json.dumps(result, indent=2, **dump))

    return result, save
