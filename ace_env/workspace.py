"""The workspace folder, ``ACE_HOME`` (default ``~/.ace``).

Everything ACE writes lives under it: the managed Neo4j server (artifacts,
data, logs, the generated password), caches, models and runs.  It sits in the
bottom layer because the environment's on-disk caches live there too.
"""

from __future__ import annotations

import os
from pathlib import Path


def ace_home() -> Path:
    """The workspace folder (created on first use, owner-only)."""
    home = Path(os.environ.get("ACE_HOME", Path.home() / ".ace")).expanduser()
    home.mkdir(parents=True, exist_ok=True)
    try:
        home.chmod(0o700)
    except OSError:  # a shared or read-only mount: leave its mode alone
        pass
    return home
