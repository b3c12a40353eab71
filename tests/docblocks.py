"""The commands of a Markdown document's ```bash blocks (shared by the unit and integration tiers)."""

from __future__ import annotations

from pathlib import Path


def bash_commands(path: Path, programs: tuple[str, ...] = ("ace",)) -> list[str]:
    """The lines of ``path``'s ```bash blocks that start with one of ``programs``, without trailing comments."""
    lines, inside = [], False
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.startswith("```"):
            inside = raw.strip() == "```bash" and not inside
            continue
        line = raw.split("  #")[0].strip()
        if inside and line.split(" ")[0] in programs:
            lines.append(line)
    return lines
