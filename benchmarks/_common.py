"""Helpers shared by the benchmark scripts (run them as `python benchmarks/NAME.py`)."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any


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
